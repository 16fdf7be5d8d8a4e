//! Starts real clusters: skipped (with a notice) where PostgreSQL is not installed,
//! unless `HERALD_REQUIRE_PG=1`.

use std::path::PathBuf;

use herald_pgtemp::{PgTemp, TempDatabase};

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    tokio::spawn(conn);
    client
}

#[tokio::test]
async fn start_two_databases_connect_and_stop() {
    let Some(pg) = PgTemp::start().expect("start cluster") else {
        return;
    };
    assert!(pg.port() > 0);
    assert!(pg.server_version() >= 100_000, "{}", pg.server_version());
    let data: PathBuf = pg.data_dir().to_path_buf();
    assert!(data.join("PG_VERSION").exists());

    let a = pg.create_database("alpha").expect("create alpha");
    let b = pg.create_database("beta").expect("create beta");
    assert!(pg.create_database("alpha").is_err(), "a second alpha");
    assert!(pg.create_database("bad-name").is_err());
    let (ca, cb) = (connect(&a).await, connect(&b).await);
    ca.batch_execute("CREATE TABLE t (x INT); INSERT INTO t VALUES (1), (2)")
        .await
        .unwrap();
    let n: i64 = ca
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    // Separate databases: beta has no table t.
    assert!(cb.query_one("SELECT count(*) FROM t", &[]).await.is_err());
    let db: String = cb
        .query_one("SELECT current_database()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(db, "beta");
    drop((ca, cb));

    // The blocking client works without a runtime too.
    let rows = pg
        .execute("SELECT datname FROM pg_database WHERE datname IN ('alpha', 'beta') ORDER BY 1")
        .unwrap();
    let names: Vec<_> = rows.into_iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, ["alpha", "beta"]);
    pg.drop_database("beta").unwrap();
    pg.drop_database("beta").unwrap(); // gone already: fine

    let port = pg.port();
    let root = data.parent().unwrap().to_path_buf();
    drop(pg);
    assert!(!root.exists(), "directory left behind: {}", root.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "server still listening"
    );
}

#[tokio::test]
async fn shared_cluster_hands_out_fresh_databases() {
    let Some(pg) = PgTemp::shared().expect("shared cluster") else {
        return;
    };
    let again = PgTemp::shared().unwrap().unwrap();
    assert_eq!(pg.port(), again.port(), "one cluster per process");
    let (one, two): (TempDatabase, TempDatabase) = (
        pg.fresh_database("fresh").unwrap(),
        pg.fresh_database("fresh").unwrap(),
    );
    assert_ne!(one.name(), two.name());
    let c = connect(one.url()).await;
    let db: String = c
        .query_one("SELECT current_database()", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(db, one.name());
    let name = two.name().to_string();
    // Dropping the guard drops the database, even with a session still open.
    drop(two);
    let rows = pg
        .execute(&format!(
            "SELECT 1 FROM pg_database WHERE datname = '{name}'"
        ))
        .unwrap();
    assert!(rows.is_empty());
    drop(one);
    assert!(
        c.query_one("SELECT 1", &[]).await.is_err(),
        "session survived the drop"
    );
}

#[tokio::test]
async fn an_immediate_restart_cuts_sessions_and_keeps_committed_data() {
    // The default `synchronous_commit=off` may lose the last commits in a
    // crash, by design.
    let options = herald_pgtemp::Options::default().set("synchronous_commit", "on");
    let Some(pg) = PgTemp::start_with(&options).expect("start cluster") else {
        return;
    };
    let url = pg.create_database("outage").expect("create");
    let client = connect(&url).await;
    client
        .batch_execute("CREATE TABLE t (x INT); INSERT INTO t VALUES (7)")
        .await
        .unwrap();
    let port = pg.port();
    pg.restart_immediate().expect("restart");
    assert_eq!(pg.port(), port);
    // The old session is gone; a new one sees what was committed.
    assert!(client.query_one("SELECT 1", &[]).await.is_err());
    let client = connect(&url).await;
    let x: i32 = client
        .query_one("SELECT x FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(x, 7);
}
