//! TLS to PostgreSQL: a throwaway cluster serving a certificate from a test
//! CA (made with rcgen). `require` encrypts without checking the certificate;
//! `verify-full` connects with the right CA and refuses with the wrong one,
//! saying why.
//!
//! Skipped (with a notice) where PostgreSQL is not installed, unless
//! `HERALD_REQUIRE_PG=1`.

use herald_pgtemp::{Options, PgTemp};
use herald_store::postgres::PgStore;
use herald_store::prelude::*;
use herald_store::{Store, StoreOptions};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A CA's certificate (PEM), and a server certificate for 127.0.0.1 it
/// signed, with that certificate's key.
fn certificates() -> (String, String, String) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (ca.pem(), server.pem(), key.serialize_pem())
}

/// Sessions of Herald's pool that run over TLS.
fn tls_sessions(pg: &PgTemp) -> usize {
    let rows = pg
        .execute(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE s.ssl AND a.application_name = 'herald'",
        )
        .unwrap();
    rows[0][0].as_deref().unwrap_or("0").parse().unwrap()
}

#[tokio::test]
async fn require_encrypts_and_verify_full_checks_the_ca() {
    let (ca, cert, key) = certificates();
    let (wrong_ca, _, _) = certificates();
    let options = Options::default().with_tls(&cert, &key);
    let Some(pg) = PgTemp::start_with(&options).expect("start cluster") else {
        return;
    };
    let url = pg.create_database("tls").expect("create database");
    let dir = tempfile::tempdir().unwrap();
    let (ca_path, wrong_path) = (dir.path().join("ca.pem"), dir.path().join("wrong.pem"));
    std::fs::write(&ca_path, &ca).unwrap();
    std::fs::write(&wrong_path, &wrong_ca).unwrap();
    let opts = StoreOptions::default();

    let store = PgStore::open(&format!("{url}?sslmode=require"), &opts)
        .await
        .expect("sslmode=require connects");
    assert_eq!(store.init_shards(16).await.unwrap(), 16);
    assert!(tls_sessions(&pg) >= 1, "require did not encrypt");
    drop(store);

    let verified = format!(
        "{url}?sslmode=verify-full&sslrootcert={}",
        ca_path.display()
    );
    let store = PgStore::open(&verified, &opts)
        .await
        .expect("verify-full with the right CA connects");
    assert_eq!(store.init_shards(16).await.unwrap(), 16);
    assert!(
        store.subscribe().await.unwrap().is_some(),
        "LISTEN over TLS"
    );
    drop(store);

    let wrong = format!(
        "{url}?sslmode=verify-full&sslrootcert={}",
        wrong_path.display()
    );
    let e = PgStore::open(&wrong, &opts)
        .await
        .expect_err("verify-full with the wrong CA must fail");
    let msg = e.to_string();
    assert!(
        msg.contains("certificate") || msg.contains("UnknownIssuer"),
        "unclear error: {msg}"
    );

    // Plain connections still work where asked for.
    let store = PgStore::open(&format!("{url}?sslmode=disable"), &opts)
        .await
        .expect("sslmode=disable connects");
    assert_eq!(store.init_shards(16).await.unwrap(), 16);
}
