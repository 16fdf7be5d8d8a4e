-- The ledger of mini-program subscribe grants (issue 40 §2).
--
-- One row per user, channel and template: one-time grants left, whether the
-- user holds a long-term subscription, and totals for the console.
CREATE TABLE grants (
    tenant_id INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    template_id TEXT NOT NULL,
    remaining BIGINT NOT NULL,
    long_term INTEGER NOT NULL,
    granted BIGINT NOT NULL,
    spent BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, channel, template_id)
);
-- The callers' keys of recordings already made, so a repeated one changes
-- nothing.
CREATE TABLE grant_keys (
    tenant_id INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    client_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, client_key)
);
-- The grant a timer spent when it was marked firing, until its send is
-- answered: a retry or a restart finds it here and spends no second one.
CREATE TABLE grant_holds (
    timer_id BIGINT PRIMARY KEY,
    tenant_id INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    template_id TEXT NOT NULL,
    one_time INTEGER NOT NULL,
    held_at BIGINT NOT NULL
);
