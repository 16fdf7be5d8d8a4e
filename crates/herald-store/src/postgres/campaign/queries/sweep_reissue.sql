INSERT INTO segments (job_id, start_idx, end_idx, cursor_idx, state,
    parent_id, attempt, not_before, priority, deadline_at, created_at, updated_at, tenant_id,
    doubt_from, doubt_to)
SELECT u.job, u.s, u.e, u.s, 'pending', u.parent, u.attempt, u.nb, u.prio, u.dl, $1, $1,
    u.tenant, u.df, u.dt
FROM unnest($2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int4[], $7::int8[],
            $8::int2[], $9::int8[], $10::int4[], $11::int8[], $12::int8[])
    AS u(job, s, e, parent, attempt, nb, prio, dl, tenant, df, dt)
