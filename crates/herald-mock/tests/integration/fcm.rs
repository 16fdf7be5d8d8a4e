//! The FCM HTTP v1 mock and its OAuth2 token endpoint over real HTTP, with JWTs signed by
//! the test-only service-account key in `tests/fixtures`.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use herald_mock::{FCM_SCOPE, FcmFaults, FcmMessage, FcmStats, MockConfig, MockServer};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::{Value, json};

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fcm-service-account.json")
}

struct ServiceAccount {
    key: RsaKeyPair,
    client_email: String,
    private_key_id: String,
}

fn service_account() -> ServiceAccount {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fixture_path()).unwrap()).expect("fixture is JSON");
    assert_eq!(doc["type"], "service_account");
    assert_eq!(doc["project_id"], "herald-mock");
    let pem = doc["private_key"].as_str().unwrap();
    let b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    ServiceAccount {
        key: RsaKeyPair::from_pkcs8(&der).expect("PKCS#8 RSA key"),
        client_email: doc["client_email"].as_str().unwrap().to_owned(),
        private_key_id: doc["private_key_id"].as_str().unwrap().to_owned(),
    }
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn sign(sa: &ServiceAccount, header: &Value, claims: &Value) -> String {
    let signed = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let mut sig = vec![0u8; sa.key.public().modulus_len()];
    sa.key
        .sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            signed.as_bytes(),
            &mut sig,
        )
        .unwrap();
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(sig))
}

fn header(sa: &ServiceAccount) -> Value {
    json!({"alg": "RS256", "typ": "JWT", "kid": sa.private_key_id})
}

fn claims(sa: &ServiceAccount, server: &MockServer) -> Value {
    let now = now_s();
    json!({
        "iss": sa.client_email,
        "scope": FCM_SCOPE,
        "aud": server.fcm_token_url(),
        "iat": now,
        "exp": now + 3600,
    })
}

async fn start(cfg: MockConfig) -> MockServer {
    MockServer::start("127.0.0.1:0".parse().unwrap(), cfg)
        .await
        .expect("mock server starts")
}

async fn start_signed() -> MockServer {
    start(MockConfig {
        fcm_service_account: Some(fixture_path()),
        ..MockConfig::default()
    })
    .await
}

async fn grant(client: &reqwest::Client, server: &MockServer, assertion: &str) -> (u16, Value) {
    let body = format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={assertion}"
    );
    let resp = client
        .post(server.fcm_token_url())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

async fn access_token(client: &reqwest::Client, server: &MockServer) -> String {
    let sa = service_account();
    let (status, body) = grant(
        client,
        server,
        &sign(&sa, &header(&sa), &claims(&sa, server)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["access_token"].as_str().unwrap().to_owned()
}

fn send_url(server: &MockServer, project: &str) -> String {
    format!("{}/v1/projects/{project}/messages:send", server.base_url())
}

async fn send(
    client: &reqwest::Client,
    server: &MockServer,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    send_to(client, server, "herald-mock", token, body).await
}

async fn send_to(
    client: &reqwest::Client,
    server: &MockServer,
    project: &str,
    token: Option<&str>,
    body: &Value,
) -> reqwest::Response {
    let mut req = client.post(send_url(server, project)).json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

fn msg(token: &str) -> Value {
    json!({"message": {"token": token, "notification": {"title": "t", "body": "b"}, "data": {"k": "v"}}})
}

/// Checks Google's error shape; returns the `error` object.
async fn expect_error(
    resp: reqwest::Response,
    status: u16,
    status_name: &str,
    error_code: Option<&str>,
) -> Value {
    assert_eq!(resp.status().as_u16(), status);
    let body: Value = resp.json().await.unwrap();
    let err = body["error"].clone();
    assert_eq!(err["code"], status, "{body}");
    assert_eq!(err["status"], status_name, "{body}");
    assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
    let codes: Vec<&str> = err["details"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["@type"] == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
        .filter_map(|d| d["errorCode"].as_str())
        .collect();
    match error_code {
        Some(c) => assert_eq!(codes, vec![c], "{body}"),
        None => assert!(codes.is_empty(), "{body}"),
    }
    err
}

async fn set_faults(client: &reqwest::Client, server: &MockServer, faults: Value) -> FcmFaults {
    let resp = client
        .post(format!("{}/_mock/fcm/faults", server.base_url()))
        .body(faults.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn token_then_send_is_recorded() {
    let server = start_signed().await;
    let client = reqwest::Client::new();
    let sa = service_account();
    let (status, body) = grant(
        &client,
        &server,
        &sign(&sa, &header(&sa), &claims(&sa, &server)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["access_token"]
            .as_str()
            .unwrap()
            .starts_with("ya29.mock-")
    );
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["token_type"], "Bearer");
    let token = body["access_token"].as_str().unwrap();

    let resp = send(&client, &server, Some(token), &msg("device-1")).await;
    assert_eq!(resp.status(), 200);
    let name = resp.json::<Value>().await.unwrap()["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(name.starts_with("projects/herald-mock/messages/"), "{name}");

    // Topic and condition targets too.
    let topic = json!({"message": {"topic": "news", "data": {"a": "1"}}});
    assert_eq!(
        send(&client, &server, Some(token), &topic).await.status(),
        200
    );
    let cond = json!({"message": {"condition": "'a' in topics && 'b' in topics"}});
    assert_eq!(
        send(&client, &server, Some(token), &cond).await.status(),
        200
    );

    let messages: Vec<FcmMessage> = client
        .get(format!("{}/_mock/fcm/messages?limit=10", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0].name, name);
    assert_eq!(messages[0].token.as_deref(), Some("device-1"));
    assert_eq!(messages[0].data.get("k").map(String::as_str), Some("v"));
    assert_eq!(messages[0].notification.as_ref().unwrap()["title"], "t");
    assert_eq!(messages[1].topic.as_deref(), Some("news"));
    assert!(messages[2].condition.is_some());
    let only: Vec<FcmMessage> = client
        .get(format!(
            "{}/_mock/fcm/messages?limit=1&token=device-1",
            server.base_url()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(only.len(), 1);

    let stats: FcmStats = client
        .get(format!("{}/_mock/fcm/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats.token_fetches, 1);
    assert_eq!(stats.received, 3);
    assert_eq!(stats.delivered, 3);
    assert_eq!(stats.by_status.get("200"), Some(&3));

    // The combined stats keep the webhook fields at the top and gain provider members.
    let all: Value = client
        .get(format!("{}/_mock/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(all["received"], 0);
    assert_eq!(all["fcm"]["delivered"], 3);
    assert_eq!(all["smtp"]["messages"], 0);

    // Reset forgets records but the token stays usable.
    client
        .post(format!("{}/_mock/reset", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(server.state().fcm_stats(), FcmStats::default());
    assert!(server.state().fcm_messages(10, None).is_empty());
    assert_eq!(
        send(&client, &server, Some(token), &msg("d"))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn bad_grants_are_refused() {
    let server = start_signed().await;
    let client = reqwest::Client::new();
    let sa = service_account();
    let good = claims(&sa, &server);
    let now = now_s();

    let refused = |status: u16, body: &Value, error: &str| {
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"], error, "{body}");
        assert!(body["error_description"].as_str().is_some());
    };

    // Wrong grant type and missing assertion.
    let resp = client
        .post(server.fcm_token_url())
        .body("grant_type=client_credentials")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"],
        "unsupported_grant_type"
    );
    let resp = client
        .post(server.fcm_token_url())
        .body("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.json::<Value>().await.unwrap()["error"],
        "invalid_request"
    );

    // Malformed JWTs.
    for bad in ["not-a-jwt", "a.b", "a.b.c.d", "!!.??.**"] {
        let (s, b) = grant(&client, &server, bad).await;
        refused(s, &b, "invalid_grant");
    }

    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    let cases = [
        (
            "wrong aud",
            with("aud", json!("https://example.test/oauth")),
        ),
        ("expired", with("iat", json!(now - 7200)).clone()),
        ("too long", with("exp", json!(now + 7200))),
        ("future iat", with("iat", json!(now + 3000))),
        (
            "unknown iss",
            with("iss", json!("someone@else.iam.gserviceaccount.com")),
        ),
        ("no iss", with("iss", json!(""))),
    ];
    for (what, mut c) in cases {
        if what == "expired" {
            c["exp"] = json!(now - 3600);
        }
        let (s, b) = grant(&client, &server, &sign(&sa, &header(&sa), &c)).await;
        assert_eq!(b["error"], "invalid_grant", "{what}: {b}");
        refused(s, &b, "invalid_grant");
    }

    // Wrong scope answers invalid_scope, as Google does.
    let (s, b) = grant(
        &client,
        &server,
        &sign(
            &sa,
            &header(&sa),
            &with(
                "scope",
                json!("https://www.googleapis.com/auth/userinfo.email"),
            ),
        ),
    )
    .await;
    refused(s, &b, "invalid_scope");

    // Not RS256, or a payload changed after signing, or the wrong kid.
    let (s, b) = grant(
        &client,
        &server,
        &sign(&sa, &json!({"alg": "HS256", "typ": "JWT"}), &good),
    )
    .await;
    refused(s, &b, "invalid_grant");
    let jwt = sign(&sa, &header(&sa), &good);
    let mut parts: Vec<String> = jwt.split('.').map(str::to_owned).collect();
    parts[1] = URL_SAFE_NO_PAD.encode(with("exp", json!(now + 3500)).to_string());
    let (s, b) = grant(&client, &server, &parts.join(".")).await;
    refused(s, &b, "invalid_grant");
    assert_eq!(b["error_description"], "Invalid JWT Signature.");
    let (s, b) = grant(
        &client,
        &server,
        &sign(&sa, &json!({"alg": "RS256", "kid": "0000"}), &good),
    )
    .await;
    refused(s, &b, "invalid_grant");

    let stats = server.state().fcm_stats();
    assert_eq!(stats.token_fetches, 0);
    assert_eq!(stats.token_rejections, 2 + 4 + 6 + 1 + 3);

    // And the good one still works, with or without a kid, and with padding.
    let (s, b) = grant(
        &client,
        &server,
        &sign(&sa, &json!({"alg": "RS256"}), &good),
    )
    .await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn without_a_key_any_well_formed_grant_is_accepted() {
    let server = start(MockConfig::default()).await;
    let client = reqwest::Client::new();
    let now = now_s();
    let claims = json!({
        "iss": "anyone@project.iam.gserviceaccount.com",
        "scope": format!("{FCM_SCOPE} https://www.googleapis.com/auth/cloud-platform"),
        "aud": "https://oauth2.googleapis.com/token",
        "iat": now, "exp": now + 3600,
    });
    let jwt = format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode("not checked")
    );
    let (s, b) = grant(&client, &server, &jwt).await;
    assert_eq!(s, 200, "{b}");
    // An iss that is not an email is still refused.
    let mut c = claims.clone();
    c["iss"] = json!("nobody");
    let jwt = format!(
        "{}.{}.c2ln",
        URL_SAFE_NO_PAD.encode(json!({"alg": "RS256"}).to_string()),
        URL_SAFE_NO_PAD.encode(c.to_string()),
    );
    let (s, b) = grant(&client, &server, &jwt).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("invalid_grant")));
}

#[tokio::test]
async fn auth_project_and_argument_errors() {
    let server = start_signed().await;
    let client = reqwest::Client::new();
    let token = access_token(&client, &server).await;

    let resp = send(&client, &server, None, &msg("d")).await;
    assert!(
        resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer ")
    );
    let e = expect_error(resp, 401, "UNAUTHENTICATED", None).await;
    assert_eq!(e["details"][0]["reason"], "CREDENTIALS_MISSING");
    let forged = format!("{}0", token);
    expect_error(
        send(&client, &server, Some(&forged), &msg("d")).await,
        401,
        "UNAUTHENTICATED",
        None,
    )
    .await;
    expect_error(
        send(&client, &server, Some("ya29.real-looking"), &msg("d")).await,
        401,
        "UNAUTHENTICATED",
        None,
    )
    .await;

    expect_error(
        send_to(&client, &server, "other-project", Some(&token), &msg("d")).await,
        403,
        "PERMISSION_DENIED",
        None,
    )
    .await;

    let invalid = [
        json!({"message": {"token": "a", "topic": "b"}}),
        json!({"message": {"data": {"a": "b"}}}),
        json!({"message": {"token": ""}}),
        json!({"message": {"topic": "bad topic!"}}),
        json!({"message": {"token": "a", "data": ["x"]}}),
        json!({"message": {"token": "a", "data": {"from": "x"}}}),
        json!({"message": {"token": "a", "notification": {"title": 1}}}),
        json!({"message": {"token": "a", "priority": "high"}}),
        json!({"message": {"token": "a"}, "dry_run": true}),
        json!({"msg": {"token": "a"}}),
        json!({"message": {"token": "a", "data": {"big": "x".repeat(5000)}}}),
        json!("message"),
    ];
    for body in &invalid {
        let resp = send(&client, &server, Some(&token), body).await;
        expect_error(resp, 400, "INVALID_ARGUMENT", Some("INVALID_ARGUMENT")).await;
    }
    let resp = client
        .post(send_url(&server, "herald-mock"))
        .bearer_auth(&token)
        .body("{not json")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "INVALID_ARGUMENT", Some("INVALID_ARGUMENT")).await;

    // A non-string data value names the field.
    let body = json!({"message": {"token": "a", "data": {"count": 1, "ok": "x"}}});
    let e = expect_error(
        send(&client, &server, Some(&token), &body).await,
        400,
        "INVALID_ARGUMENT",
        Some("INVALID_ARGUMENT"),
    )
    .await;
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("message.data[0].value") && message.contains("count"),
        "{message}"
    );
    let violation = e["details"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["@type"] == "type.googleapis.com/google.rpc.BadRequest")
        .unwrap();
    assert_eq!(
        violation["fieldViolations"][0]["field"],
        "message.data[0].value"
    );

    // validate_only answers the fake id and delivers nothing.
    let body = json!({"message": {"token": "a"}, "validate_only": true});
    let resp = send(&client, &server, Some(&token), &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["name"],
        "projects/herald-mock/messages/fake_message_id"
    );

    let stats = server.state().fcm_stats();
    assert_eq!(stats.delivered, 0);
    assert_eq!(stats.validated, 1);
    assert_eq!(stats.errors.get("UNAUTHENTICATED"), Some(&3));
    assert_eq!(stats.errors.get("PERMISSION_DENIED"), Some(&1));
    assert_eq!(
        stats.errors.get("INVALID_ARGUMENT"),
        Some(&(invalid.len() as u64 + 2))
    );
}

#[tokio::test]
async fn injected_faults() {
    let server = start_signed().await;
    let client = reqwest::Client::new();
    let token = access_token(&client, &server).await;

    let f = set_faults(
        &client,
        &server,
        json!({
            "quota_next": 2, "retry_after_secs": 7, "unavailable_next": 1, "internal_next": 1,
            "unregistered": ["gone"], "sender_id_mismatch": ["foreign"]
        }),
    )
    .await;
    assert_eq!(f.quota_next, 2);
    let read: FcmFaults = client
        .get(format!("{}/_mock/fcm/faults", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(read, f);

    for _ in 0..2 {
        let resp = send(&client, &server, Some(&token), &msg("d")).await;
        assert_eq!(resp.headers()["retry-after"], "7");
        expect_error(resp, 429, "RESOURCE_EXHAUSTED", Some("QUOTA_EXCEEDED")).await;
    }
    let resp = send(&client, &server, Some(&token), &msg("d")).await;
    expect_error(resp, 503, "UNAVAILABLE", Some("UNAVAILABLE")).await;
    let resp = send(&client, &server, Some(&token), &msg("d")).await;
    expect_error(resp, 500, "INTERNAL", Some("INTERNAL")).await;
    assert_eq!(
        send(&client, &server, Some(&token), &msg("d"))
            .await
            .status(),
        200
    );

    let resp = send(&client, &server, Some(&token), &msg("gone")).await;
    expect_error(resp, 404, "NOT_FOUND", Some("UNREGISTERED")).await;
    let resp = send(&client, &server, Some(&token), &msg("foreign")).await;
    expect_error(resp, 403, "PERMISSION_DENIED", Some("SENDER_ID_MISMATCH")).await;

    // expire_tokens: every token so far answers 401 ACCESS_TOKEN_EXPIRED; a new one works.
    let f = set_faults(&client, &server, json!({"expire_tokens": true})).await;
    assert!(!f.expire_tokens, "one-shot fault reads back false");
    let e = expect_error(
        send(&client, &server, Some(&token), &msg("d")).await,
        401,
        "UNAUTHENTICATED",
        None,
    )
    .await;
    assert_eq!(e["details"][0]["reason"], "ACCESS_TOKEN_EXPIRED");
    let fresh = access_token(&client, &server).await;
    assert_ne!(fresh, token);
    assert_eq!(
        send(&client, &server, Some(&fresh), &msg("d"))
            .await
            .status(),
        200
    );
    expect_error(
        send(&client, &server, Some(&token), &msg("d")).await,
        401,
        "UNAUTHENTICATED",
        None,
    )
    .await;

    let stats = server.state().fcm_stats();
    assert_eq!(stats.errors.get("QUOTA_EXCEEDED"), Some(&2));
    assert_eq!(stats.errors.get("UNAVAILABLE"), Some(&1));
    assert_eq!(stats.errors.get("INTERNAL"), Some(&1));
    assert_eq!(stats.errors.get("UNREGISTERED"), Some(&1));
    assert_eq!(stats.errors.get("SENDER_ID_MISMATCH"), Some(&1));
    assert_eq!(stats.by_status.get("429"), Some(&2));
    assert_eq!(stats.delivered, 2);
    assert_eq!(stats.token_fetches, 2);

    // A typo in a fault is refused.
    let resp = client
        .post(format!("{}/_mock/fcm/faults", server.base_url()))
        .body(r#"{"quota_nxt": 1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}

#[tokio::test]
async fn project_quota_per_minute() {
    let server = start(MockConfig {
        fcm_service_account: Some(fixture_path()),
        fcm_quota_per_minute: Some(3),
        ..MockConfig::default()
    })
    .await;
    let client = reqwest::Client::new();
    let token = access_token(&client, &server).await;
    // 4xx answers count against the quota too.
    let bad = json!({"message": {}});
    assert_eq!(
        send(&client, &server, Some(&token), &bad).await.status(),
        400
    );
    for _ in 0..2 {
        assert_eq!(
            send(&client, &server, Some(&token), &msg("d"))
                .await
                .status(),
            200
        );
    }
    let resp = send(&client, &server, Some(&token), &msg("d")).await;
    let secs: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&secs), "{secs}");
    expect_error(resp, 429, "RESOURCE_EXHAUSTED", Some("QUOTA_EXCEEDED")).await;
}

#[tokio::test]
async fn a_bad_service_account_file_fails_start() {
    let dir = std::env::temp_dir().join(format!("herald-mock-fcm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(
        &path,
        r#"{"type":"service_account","client_email":"a@b","private_key":"nope"}"#,
    )
    .unwrap();
    let r = MockServer::start(
        "127.0.0.1:0".parse().unwrap(),
        MockConfig {
            fcm_service_account: Some(path),
            ..MockConfig::default()
        },
    )
    .await;
    assert!(r.is_err());
    let _ = std::fs::remove_dir_all(dir);
}
