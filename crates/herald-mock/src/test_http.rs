//! A mock server on a free port and a client for it, for the provider
//! modules' tests that talk to it over real HTTP.

use serde_json::Value;

use crate::{MockConfig, MockServer};

pub(crate) struct TestMock {
    pub server: MockServer,
    pub http: reqwest::Client,
}

impl TestMock {
    pub async fn start() -> TestMock {
        let server = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
            .await
            .expect("mock server starts");
        TestMock {
            server,
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.base_url())
    }

    /// GETs `path`, expects HTTP 200 and a JSON answer.
    pub async fn get(&self, path: &str) -> Value {
        let resp = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "GET {path}");
        resp.json().await.unwrap()
    }

    /// POSTs `body` as JSON; the status and the answer's text.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, String) {
        let resp = self
            .http
            .post(self.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    /// POSTs `body`, expects HTTP 200 and a JSON answer.
    pub async fn post(&self, path: &str, body: &Value) -> Value {
        let (status, text) = self.post_raw(path, body.to_string()).await;
        assert_eq!(status, 200, "POST {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
    }
}
