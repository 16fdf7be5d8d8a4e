"""A model, in plain SQLite, of where the timers table spends its writes:
today's layout against a lean pending table with finished timers moved to
a history table, either in the completion's transaction or by a background
mover in sorted batches (issue 42). 1,000,000 inserts in batches of 3,000,
then 300,000 claims and completions in batches of 1,000, 64 MiB cache.

    python3 scripts/bench/sqlite-split-model.py seq      # recipients in order (as `herald bench` sends them)
    python3 scripts/bench/sqlite-split-model.py rand     # recipients scattered (as real ids arrive)
    python3 scripts/bench/sqlite-split-model.py rand m   # the background-mover layout

Databases go to $MODEL_DIR (default /tmp/herald-split-model).
"""
import sqlite3, time, random, os, sys
D=os.environ.get("MODEL_DIR", "/tmp/herald-split-model")
os.makedirs(D, exist_ok=True)
COLS="""id INTEGER PRIMARY KEY {auto}, shard INTEGER NOT NULL, due_at INTEGER NOT NULL,
     priority INTEGER NOT NULL, kind TEXT NOT NULL, state INTEGER NOT NULL, channel TEXT NOT NULL, recipient TEXT NOT NULL,
     message TEXT NOT NULL, idempotency_key TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT, created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL, delivered_at INTEGER, tenant_id INTEGER NOT NULL DEFAULT 1"""
def db(name):
    p=os.path.join(D, f"{name}.db")
    for s in ("","-wal","-shm"):
        try: os.remove(p+s)
        except: pass
    c=sqlite3.connect(p, isolation_level=None)
    c.execute("pragma journal_mode=wal"); c.execute("pragma synchronous=normal"); c.execute("pragma cache_size=-65536")
    return c
def today(c):
    c.execute(f"CREATE TABLE timers ({COLS.format(auto='AUTOINCREMENT')}) STRICT")
    for i in ["CREATE INDEX pd ON timers (due_at, id) WHERE state = 0",
              "CREATE UNIQUE INDEX ik ON timers (idempotency_key, tenant_id) WHERE idempotency_key IS NOT NULL",
              "CREATE INDEX td ON timers (tenant_id, due_at)","CREATE INDEX tsd ON timers (tenant_id, state, due_at)",
              "CREATE INDEX trd ON timers (tenant_id, recipient, due_at)",
              "CREATE INDEX fin ON timers (updated_at, id) WHERE state >= 2 AND kind <> 'reminder'",
              "CREATE INDEX firing ON timers (shard, id) WHERE state = 1"]: c.execute(i)
def split(c, pend_trd=True):
    c.execute(f"CREATE TABLE timers ({COLS.format(auto='AUTOINCREMENT')}) STRICT")
    c.execute(f"CREATE TABLE history ({COLS.format(auto='')}) STRICT")
    for i in ["CREATE INDEX pd ON timers (due_at, id) WHERE state = 0",
              "CREATE UNIQUE INDEX ik ON timers (idempotency_key, tenant_id) WHERE idempotency_key IS NOT NULL",
              "CREATE INDEX firing ON timers (shard, id) WHERE state = 1",
              "CREATE UNIQUE INDEX hik ON history (idempotency_key, tenant_id) WHERE idempotency_key IS NOT NULL",
              "CREATE INDEX htd ON history (tenant_id, due_at)","CREATE INDEX htsd ON history (tenant_id, state, due_at)",
              "CREATE INDEX htrd ON history (tenant_id, recipient, due_at)",
              "CREATE INDEX hfin ON history (updated_at, id) WHERE kind <> 'reminder'"]+(["CREATE INDEX trd ON timers (tenant_id, recipient, due_at)"] if pend_trd else []): c.execute(i)
    c.execute("""CREATE TRIGGER finish AFTER UPDATE OF state ON timers WHEN NEW.state >= 2 BEGIN
       INSERT INTO history SELECT * FROM timers WHERE id = NEW.id; DELETE FROM timers WHERE id = NEW.id; END""")
def ingest(c, rcp, n, batch):
    """Inserts n timers in batches; returns inserts a second."""
    due=1800000000000
    rows=[(random.randrange(256), due+i//1000, 0, 'timer', 0, 'webhook', rcp(i), '{"text":"hello there %d"}'%i, None, due-3600000, due-3600000, 1) for i in range(n)]
    t=time.perf_counter()
    for b in range(0,n,batch):
        c.execute("BEGIN IMMEDIATE")
        c.executemany("INSERT INTO timers (shard,due_at,priority,kind,state,channel,recipient,message,idempotency_key,created_at,updated_at,tenant_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows[b:b+batch])
        c.execute("COMMIT")
    return n/(time.perf_counter()-t)
def claim_and_complete(c, m, cbatch):
    """Claims (state 1) then completes (state 2) the first m timers in batches; returns timers a second."""
    t=time.perf_counter()
    for b in range(1,m+1,cbatch):
        ids=list(range(b,b+cbatch)); q=",".join("?"*len(ids))
        c.execute("BEGIN IMMEDIATE"); c.execute(f"UPDATE timers SET state=1 WHERE id IN ({q})", ids); c.execute("COMMIT")
        c.execute("BEGIN IMMEDIATE"); c.execute(f"UPDATE timers SET state=2, updated_at=updated_at+1, attempts=1 WHERE id IN ({q})", ids); c.execute("COMMIT")
    return m/(time.perf_counter()-t)
def run(name, setup, rcp, n=1000000, batch=3000, cbatch=1000):
    c=db(name); setup(c)
    ing=ingest(c, rcp, n, batch)
    comp=claim_and_complete(c, min(n,300000), cbatch)
    print(f"{name:22s} ingest {ing:9.0f}/s   claim+complete {comp:9.0f}/s", flush=True)
mode=sys.argv[1]
RCP=(lambda i:"user-%d"%i) if mode=="seq" else (lambda i:"oXa%012d"%random.randrange(10**12))
if len(sys.argv)<3: run("today-"+mode, today, RCP)
if len(sys.argv)<3: run("split-trd-"+mode, split, RCP)
if len(sys.argv)<3: run("split-notrd-"+mode, lambda c: split(c, False), RCP)

def mover_variant(name, rcp, n=1000000, batch=3000, cbatch=1000, mbatch=50000):
    c=db(name); split(c, False)
    c.execute("DROP TRIGGER finish")
    c.execute("CREATE INDEX done ON timers (id) WHERE state >= 2")
    ing=ingest(c, rcp, n, batch)
    comp=claim_and_complete(c, min(n,300000), cbatch)
    t=time.perf_counter(); moved=0
    while True:
        c.execute("BEGIN IMMEDIATE")
        c.execute("CREATE TEMP TABLE IF NOT EXISTS mv (id INTEGER PRIMARY KEY)")
        c.execute("DELETE FROM mv")
        k=c.execute(f"INSERT INTO mv SELECT id FROM timers WHERE state >= 2 ORDER BY id LIMIT {mbatch}").rowcount
        if k<=0: c.execute("COMMIT"); break
        c.execute("INSERT INTO history SELECT t.* FROM mv JOIN timers t USING (id) ORDER BY t.tenant_id, t.recipient, t.due_at")
        c.execute("DELETE FROM timers WHERE id IN (SELECT id FROM mv)")
        c.execute("COMMIT"); moved+=k
    mv=moved/(time.perf_counter()-t)
    print(f"{name:22s} ingest {ing:9.0f}/s   claim+complete {comp:9.0f}/s  mover({mbatch}) {mv:9.0f}/s", flush=True)
if len(sys.argv)>2:
    for mb in (20000, 100000): mover_variant(f"mover-{mode}", RCP, mbatch=mb)
