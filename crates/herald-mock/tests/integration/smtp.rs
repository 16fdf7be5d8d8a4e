//! The SMTP sink over real TCP: driven by `lettre` for the happy paths and by raw command
//! lines for the error paths.

use std::net::SocketAddr;
use std::time::Duration;

use herald_mock::{MockConfig, MockServer, SmtpFaults, SmtpMessage, SmtpStats, TempfailStage};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

async fn start(cfg: MockConfig) -> MockServer {
    MockServer::start(
        "127.0.0.1:0".parse().unwrap(),
        MockConfig {
            smtp_listen: Some("127.0.0.1:0".parse().unwrap()),
            ..cfg
        },
    )
    .await
    .expect("mock server starts")
}

async fn start_with_auth() -> MockServer {
    start(MockConfig {
        smtp_username: Some("herald".into()),
        smtp_password: Some("s3cret".into()),
        ..MockConfig::default()
    })
    .await
}

fn mailer(server: &MockServer, creds: Option<(&str, &str)>) -> AsyncSmtpTransport<Tokio1Executor> {
    let addr = server.smtp_addr().expect("smtp running");
    let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(addr.ip().to_string())
        .port(addr.port())
        .timeout(Some(Duration::from_secs(10)));
    if let Some((u, p)) = creds {
        b = b.credentials(Credentials::new(u.into(), p.into()));
    }
    b.build()
}

fn email(to: &[&str], subject: &str, body: &str) -> Message {
    let mut b = Message::builder()
        .from("Herald <herald@example.com>".parse().unwrap())
        .subject(subject);
    for t in to {
        b = b.to(t.parse().unwrap());
    }
    b.body(body.to_owned()).unwrap()
}

#[tokio::test]
async fn lettre_delivers_and_the_message_is_recorded() {
    let server = start(MockConfig::default()).await;
    let m = mailer(&server, None);
    let body = "Hello there,\n.a line that starts with a dot\n..and two\nbye";
    m.send(email(
        &["a@example.com", "B@example.org"],
        "Plain subject",
        body,
    ))
    .await
    .expect("sent");
    let subject = "Grüße, 你好 — reminder";
    let body2 = "Ünïcödé body ✓\nsecond line";
    m.send(email(&["c@example.com"], subject, body2))
        .await
        .expect("sent");

    let msgs = server.state().smtp_messages(10, None);
    assert_eq!(msgs.len(), 2);
    let first = &msgs[0];
    assert_eq!(first.from, "herald@example.com");
    assert_eq!(first.to, vec!["a@example.com", "B@example.org"]);
    assert_eq!(first.subject.as_deref(), Some("Plain subject"));
    assert_eq!(first.body, body);
    assert!(first.raw.contains("\r\n.a line that starts with a dot\r\n"));
    assert!(first.raw.contains("\r\n..and two\r\n"));
    assert!(first.auth_user.is_none());
    assert!(!first.id.is_empty() && first.at_ms > 0);
    let second = &msgs[1];
    assert_eq!(second.subject.as_deref(), Some(subject));
    assert_eq!(second.body, body2);

    // Over HTTP, filtered by recipient (case-insensitive).
    let client = reqwest::Client::new();
    let got: Vec<SmtpMessage> = client
        .get(format!(
            "{}/_mock/smtp/messages?limit=5&to=b@example.org",
            server.base_url()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].subject.as_deref(), Some("Plain subject"));
    let stats: SmtpStats = client
        .get(format!("{}/_mock/smtp/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats.messages, 2);
    assert_eq!(stats.recipients, 3);
    assert!(stats.connections >= 1);
    let all: Value = client
        .get(format!("{}/_mock/stats", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(all["smtp"]["messages"], 2);

    client
        .post(format!("{}/_mock/reset", server.base_url()))
        .send()
        .await
        .unwrap();
    assert!(server.state().smtp_messages(10, None).is_empty());
    assert_eq!(server.state().smtp_stats().messages, 0);
}

#[tokio::test]
async fn lettre_auth_plain_and_login() {
    let server = start_with_auth().await;
    for mechanism in [Mechanism::Plain, Mechanism::Login] {
        let addr = server.smtp_addr().unwrap();
        let m = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
            .port(addr.port())
            .credentials(Credentials::new("herald".into(), "s3cret".into()))
            .authentication(vec![mechanism])
            .build();
        m.send(email(&["a@example.com"], "auth", "ok"))
            .await
            .expect("authenticated send");
    }
    let msgs = server.state().smtp_messages(10, None);
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs.iter()
            .all(|m| m.auth_user.as_deref() == Some("herald"))
    );

    let wrong = mailer(&server, Some(("herald", "nope")));
    let err = wrong
        .send(email(&["a@example.com"], "x", "y"))
        .await
        .unwrap_err();
    assert!(err.is_permanent(), "{err}");
    let anonymous = mailer(&server, None);
    let err = anonymous
        .send(email(&["a@example.com"], "x", "y"))
        .await
        .unwrap_err();
    assert!(err.is_permanent(), "{err}");

    let stats = server.state().smtp_stats();
    assert_eq!(stats.auth_successes, 2);
    assert_eq!(stats.auth_failures, 1);
    assert_eq!(stats.messages, 2);
}

#[tokio::test]
async fn lettre_sees_tempfail_and_reject() {
    let server = start(MockConfig::default()).await;
    let m = mailer(&server, None);

    server.state().set_smtp_faults(SmtpFaults {
        tempfail_next: 1,
        ..SmtpFaults::default()
    });
    let err = m
        .send(email(&["a@example.com"], "s", "b"))
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err}");
    assert_eq!(err.status().map(|c| c.to_string()).as_deref(), Some("451"));
    m.send(email(&["a@example.com"], "s", "b"))
        .await
        .expect("retry works");

    server.state().set_smtp_faults(SmtpFaults {
        tempfail_next: 1,
        tempfail_stage: TempfailStage::Rcpt,
        reject: vec!["Gone@Example.com".into()],
    });
    let err = m
        .send(email(&["a@example.com"], "s", "b"))
        .await
        .unwrap_err();
    assert!(err.is_transient(), "{err}");
    let err = m
        .send(email(&["gone@example.com"], "s", "b"))
        .await
        .unwrap_err();
    assert!(err.is_permanent(), "{err}");
    assert_eq!(err.status().map(|c| c.to_string()).as_deref(), Some("550"));

    // Faults over HTTP: read back, and a typo is refused.
    let client = reqwest::Client::new();
    let f: SmtpFaults = client
        .get(format!("{}/_mock/smtp/faults", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(f.tempfail_next, 0);
    assert_eq!(f.reject, vec!["Gone@Example.com"]);
    let resp = client
        .post(format!("{}/_mock/smtp/faults", server.base_url()))
        .body(r#"{"tempfail_next": 2, "tempfail_stage": "rcpt", "reject": []}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(server.state().smtp_faults().tempfail_next, 2);
    let resp = client
        .post(format!("{}/_mock/smtp/faults", server.base_url()))
        .body(r#"{"tempfail": 2}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    let stats = server.state().smtp_stats();
    assert_eq!(stats.messages, 1);
    assert_eq!(stats.tempfailed, 2);
    assert_eq!(stats.rejected, 1);
}

/// A raw SMTP client: send lines, read (possibly multi-line) replies.
struct Raw {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
}

impl Raw {
    async fn connect(addr: SocketAddr) -> Raw {
        let (r, w) = TcpStream::connect(addr).await.unwrap().into_split();
        let mut raw = Raw {
            r: BufReader::new(r),
            w,
        };
        raw.expect(220).await;
        raw
    }

    /// The next reply: its code and all its lines.
    async fn reply(&mut self) -> (u16, String) {
        let mut all = String::new();
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(Duration::from_secs(10), self.r.read_line(&mut line))
                .await
                .expect("reply in time")
                .unwrap();
            assert!(n > 0, "connection closed; got so far: {all:?}");
            all.push_str(&line);
            if line.as_bytes().get(3) != Some(&b'-') {
                let code = line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0);
                return (code, all);
            }
        }
    }

    async fn expect(&mut self, code: u16) -> String {
        let (got, text) = self.reply().await;
        assert_eq!(got, code, "reply: {text}");
        text
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.unwrap();
    }

    async fn cmd(&mut self, line: &str, code: u16) -> String {
        self.send(format!("{line}\r\n").as_bytes()).await;
        self.expect(code).await
    }

    /// True once the server has closed the connection.
    async fn closed(&mut self) -> bool {
        let mut line = String::new();
        matches!(
            tokio::time::timeout(Duration::from_secs(10), self.r.read_line(&mut line)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

#[tokio::test]
async fn raw_sequence_errors_and_recovery() {
    let server = start(MockConfig::default()).await;
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("MAIL FROM:<a@example.com>", 503).await;
    c.cmd("EHLO", 501).await;
    let ehlo = c.cmd("EHLO client.test", 250).await;
    assert!(
        ehlo.contains("8BITMIME") && ehlo.contains("SIZE "),
        "{ehlo}"
    );
    assert!(
        !ehlo.contains("AUTH"),
        "no AUTH without credentials: {ehlo}"
    );
    c.cmd("AUTH PLAIN AGhlcmFsZABzM2NyZXQ=", 503).await;
    c.cmd("RCPT TO:<a@example.com>", 503).await;
    c.cmd("DATA", 503).await;
    c.cmd("STARTTLS", 502).await;
    c.cmd("BOGUS", 500).await;
    c.cmd("MAIL FROM:a@example.com", 250).await;
    c.cmd("MAIL FROM:<b@example.com>", 503).await;
    c.cmd("DATA", 554).await;
    c.cmd("RCPT TO:<not-an-address>", 501).await;
    c.cmd("RCPT TO:<x@example.com> NOTIFY=NEVER", 555).await;
    c.cmd("RSET", 250).await;
    c.cmd("RCPT TO:<x@example.com>", 503).await;
    c.cmd("NOOP", 250).await;
    c.cmd("VRFY someone", 252).await;
    c.cmd("HELP", 214).await;

    // Oversized command line: refused, connection still usable.
    let long = format!("NOOP {}\r\n", "x".repeat(10_000));
    c.send(long.as_bytes()).await;
    c.expect(500).await;
    // Garbage bytes: refused, no harm done.
    c.send(b"\xff\xfe\x00\x01garbage\r\n").await;
    c.expect(500).await;
    c.cmd("NOOP", 250).await;
    c.cmd("QUIT", 221).await;
    assert!(c.closed().await);
    assert!(server.state().smtp_stats().protocol_errors >= 12);

    // HELO (not EHLO) works for plain mail; pipelined commands are answered in order.
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("HELO old.client", 250).await;
    c.send(b"MAIL FROM:<>\r\nRCPT TO:<z@example.com>\r\nDATA\r\n")
        .await;
    c.expect(250).await;
    c.expect(250).await;
    c.expect(354).await;
    c.send(b"Subject: =?utf-8?Q?caf=C3=A9?=\r\n\r\nbody\r\n.\r\n")
        .await;
    c.expect(250).await;
    let m = server.state().smtp_messages(1, Some("z@example.com"));
    assert_eq!(m[0].from, "");
    assert_eq!(m[0].subject.as_deref(), Some("café"));
    assert_eq!(m[0].helo, "old.client");
}

#[tokio::test]
async fn raw_dot_stuffing() {
    let server = start(MockConfig::default()).await;
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("EHLO client.test", 250).await;
    c.cmd("MAIL FROM:<a@example.com> BODY=8BITMIME SIZE=100", 250)
        .await;
    c.cmd("RCPT TO:<b@example.com>", 250).await;
    c.cmd("DATA", 354).await;
    c.send(b"Subject: dots\r\n\r\n..leading dot\r\n...\r\n. \r\nmiddle . dot\r\n.\r\n")
        .await;
    c.expect(250).await;
    let m = &server.state().smtp_messages(1, None)[0];
    assert_eq!(
        m.raw,
        "Subject: dots\r\n\r\n.leading dot\r\n..\r\n \r\nmiddle . dot\r\n"
    );
    assert_eq!(m.body, ".leading dot\n..\n \nmiddle . dot");
    // The transaction is over; a new one may start on the same connection.
    c.cmd("RCPT TO:<b@example.com>", 503).await;
    c.cmd("MAIL FROM:<a@example.com>", 250).await;
}

#[tokio::test]
async fn raw_auth() {
    let server = start_with_auth().await;
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("HELO x", 250).await;
    c.cmd("AUTH PLAIN AGhlcmFsZABzM2NyZXQ=", 503).await; // needs EHLO
    let ehlo = c.cmd("EHLO client.test", 250).await;
    assert!(ehlo.contains("AUTH PLAIN LOGIN"), "{ehlo}");
    c.cmd("MAIL FROM:<a@example.com>", 530).await;
    // "\0herald\0wrong"
    c.cmd("AUTH PLAIN AGhlcmFsZAB3cm9uZw==", 535).await;
    c.cmd("AUTH CRAM-MD5", 504).await;
    c.cmd("AUTH PLAIN !!notbase64", 501).await;
    c.cmd("AUTH LOGIN", 334).await;
    c.cmd("*", 501).await;
    // Interactive PLAIN with the right credentials.
    c.cmd("AUTH PLAIN", 334).await;
    c.cmd("AGhlcmFsZABzM2NyZXQ=", 235).await;
    c.cmd("AUTH PLAIN AGhlcmFsZABzM2NyZXQ=", 503).await; // already authenticated
    c.cmd("MAIL FROM:<a@example.com>", 250).await;

    // LOGIN with a wrong password.
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("EHLO client.test", 250).await;
    c.cmd("AUTH LOGIN aGVyYWxk", 334).await;
    c.cmd("bm9wZQ==", 535).await;
    let stats = server.state().smtp_stats();
    assert_eq!(stats.auth_failures, 2);
    assert_eq!(stats.auth_successes, 1);
}

#[tokio::test]
async fn raw_limits() {
    let server = start(MockConfig {
        smtp_max_message_bytes: Some(1000),
        ..MockConfig::default()
    })
    .await;
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    let ehlo = c.cmd("EHLO client.test", 250).await;
    assert!(ehlo.contains("SIZE 1000"), "{ehlo}");
    c.cmd("MAIL FROM:<a@example.com> SIZE=5000", 552).await;
    c.cmd("MAIL FROM:<a@example.com> SIZE=500", 250).await;
    for i in 0..100 {
        c.cmd(&format!("RCPT TO:<r{i}@example.com>"), 250).await;
    }
    c.cmd("RCPT TO:<r100@example.com>", 452).await;
    c.cmd("DATA", 354).await;
    for _ in 0..30 {
        c.send(format!("{}\r\n", "y".repeat(70)).as_bytes()).await;
    }
    c.send(b".\r\n").await;
    c.expect(552).await;

    // A text line over 998 octets fails the message at the end of DATA.
    c.cmd("MAIL FROM:<a@example.com>", 250).await;
    c.cmd("RCPT TO:<b@example.com>", 250).await;
    c.cmd("DATA", 354).await;
    c.send(format!("{}\r\n.\r\n", "z".repeat(999)).as_bytes())
        .await;
    c.expect(500).await;
    assert!(server.state().smtp_messages(10, None).is_empty());
    assert_eq!(server.state().smtp_stats().rejected, 4);

    // Too many bad commands close the connection.
    for _ in 0..19 {
        c.cmd("WHAT", 500).await;
    }
    c.send(b"WHAT\r\n").await;
    c.expect(500).await;
    c.expect(421).await;
    assert!(c.closed().await);
}

#[tokio::test]
async fn shutdown_closes_the_smtp_listener() {
    let server = start(MockConfig::default()).await;
    let addr = server.smtp_addr().unwrap();
    let mut c = Raw::connect(addr).await;
    c.cmd("EHLO client.test", 250).await;
    server.shutdown_and_wait().await;
    c.expect(421).await;
    assert!(TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let server = start(MockConfig {
        smtp_idle_timeout: Some(Duration::from_millis(300)),
        ..MockConfig::default()
    })
    .await;
    let mut c = Raw::connect(server.smtp_addr().unwrap()).await;
    c.cmd("EHLO client.test", 250).await;
    // A half-sent line does not keep the connection alive either.
    c.send(b"NOO").await;
    let (code, text) = c.reply().await;
    assert_eq!(code, 421, "{text}");
    assert!(c.closed().await);
}
