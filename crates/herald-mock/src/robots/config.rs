//! The robot mocks' public types: which robots exist and their limits, the
//! faults a test can inject, and what the control routes answer.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{dingtalk, feishu, wecom};

/// How many accepted messages `GET /_mock/robots/messages` can show.
pub const ROBOTS_RING_CAPACITY: usize = 10_000;
/// The WeCom group robot `herald mock` knows without configuration.
pub const DEFAULT_WECOM_ROBOT_KEY: &str = "mock-wecom-robot";
/// The DingTalk custom robot `herald mock` knows without configuration.
pub const DEFAULT_DINGTALK_ROBOT_TOKEN: &str = "mock-dingtalk-robot";
/// Its signing secret ("加签"); DingTalk's real secrets start with `SEC`.
pub const DEFAULT_DINGTALK_ROBOT_SECRET: &str = "SECmock-dingtalk-secret";
/// The Feishu custom bot `herald mock` knows without configuration.
pub const DEFAULT_FEISHU_BOT_TOKEN: &str = "mock-feishu-bot";
/// Its signing secret.
pub const DEFAULT_FEISHU_BOT_SECRET: &str = "mock-feishu-secret";

/// Which webhook a robot belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RobotProvider {
    Wecom,
    Dingtalk,
    Feishu,
}

impl RobotProvider {
    pub const ALL: [RobotProvider; 3] = [
        RobotProvider::Wecom,
        RobotProvider::Dingtalk,
        RobotProvider::Feishu,
    ];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RobotProvider::Wecom => "wecom",
            RobotProvider::Dingtalk => "dingtalk",
            RobotProvider::Feishu => "feishu",
        }
    }

    /// The retryable rate-limit code, which is what an injected fault
    /// answers unless it names another.
    pub(super) fn rate_code(self) -> i64 {
        match self {
            RobotProvider::Wecom => wecom::FREQ_CODE,
            RobotProvider::Dingtalk => dingtalk::TOO_FAST_CODE,
            RobotProvider::Feishu => feishu::FREQ_CODE,
        }
    }
}

/// One robot: a token (WeCom's `key`, DingTalk's `access_token`, the last
/// segment of Feishu's hook URL) and its optional security settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotConfig {
    pub provider: RobotProvider,
    pub token: String,
    /// Signing secret (DingTalk and Feishu; WeCom has no signing and
    /// ignores it). Without one, `timestamp` and `sign` are not checked.
    #[serde(default)]
    pub secret: Option<String>,
    /// A word every message's text must contain ("custom keywords").
    #[serde(default)]
    pub keyword: Option<String>,
}

/// Per-robot limits. Zero turns a limit off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotLimits {
    /// Accepted messages per WeCom robot in any rolling 60 s (answer 45009).
    pub wecom_per_minute: u32,
    /// Accepted messages per DingTalk robot in any rolling 60 s; one more
    /// answers 130101 and throttles the robot.
    pub dingtalk_per_minute: u32,
    /// How long a DingTalk robot answers 130101 to everything once it went
    /// over its per-minute limit.
    pub dingtalk_throttle_secs: u64,
    /// Accepted messages per Feishu bot in any rolling 60 s (answer 11232).
    pub feishu_per_minute: u32,
    /// Accepted messages per Feishu bot in any rolling second (answer 11232).
    pub feishu_per_second: u32,
}

impl Default for RobotLimits {
    fn default() -> Self {
        RobotLimits {
            wecom_per_minute: 20,
            dingtalk_per_minute: 20,
            dingtalk_throttle_secs: 600,
            feishu_per_minute: 100,
            feishu_per_second: 5,
        }
    }
}

/// The robots the mock knows and their limits; `MockConfig::robots`,
/// `GET|POST /_mock/robots/config`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotsConfig {
    pub robots: Vec<RobotConfig>,
    pub limits: RobotLimits,
}

impl Default for RobotsConfig {
    fn default() -> Self {
        RobotsConfig {
            robots: vec![
                RobotConfig {
                    provider: RobotProvider::Wecom,
                    token: DEFAULT_WECOM_ROBOT_KEY.to_owned(),
                    secret: None,
                    keyword: None,
                },
                RobotConfig {
                    provider: RobotProvider::Dingtalk,
                    token: DEFAULT_DINGTALK_ROBOT_TOKEN.to_owned(),
                    secret: Some(DEFAULT_DINGTALK_ROBOT_SECRET.to_owned()),
                    keyword: None,
                },
                RobotConfig {
                    provider: RobotProvider::Feishu,
                    token: DEFAULT_FEISHU_BOT_TOKEN.to_owned(),
                    secret: Some(DEFAULT_FEISHU_BOT_SECRET.to_owned()),
                    keyword: None,
                },
            ],
            limits: RobotLimits::default(),
        }
    }
}

impl RobotsConfig {
    /// Tokens must be non-empty and distinct per provider; a secret or
    /// keyword, when given, must be non-empty (leave it out instead).
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = HashSet::new();
        for r in &self.robots {
            let p = r.provider.as_str();
            if r.token.is_empty() {
                return Err(format!("a {p} robot has an empty token"));
            }
            if r.token.contains(['/', '?', '#']) {
                return Err(format!("{p} robot token {:?} holds / ? or #", r.token));
            }
            if !seen.insert((r.provider, r.token.as_str())) {
                return Err(format!("{p} robot token {:?} is listed twice", r.token));
            }
            if r.secret.as_deref() == Some("") {
                return Err(format!("{p} robot {:?} has an empty secret", r.token));
            }
            if r.keyword.as_deref() == Some("") {
                return Err(format!("{p} robot {:?} has an empty keyword", r.token));
            }
        }
        Ok(())
    }
}

/// What the next sends of one provider do wrong; see [`RobotFaultSet`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotFaults {
    /// The next N sends answer `code` in the body (HTTP 200), whatever they
    /// hold.
    pub fail_next: u32,
    /// The code those sends answer; `None` means the provider's rate-limit
    /// code (WeCom 45009, DingTalk 130101, Feishu 11232), the retryable one.
    pub code: Option<i64>,
    /// Its message; `None` means the provider's text for a code the mock
    /// knows, else "mock fault".
    pub msg: Option<String>,
    /// The next N sends (after `fail_next` ran out) answer HTTP `status`
    /// with a proxy's HTML page, as a failing gateway does.
    pub http_status_next: u32,
    /// 400 to 599.
    pub status: u16,
    /// Delay added before every answer of this provider.
    pub latency_ms: u64,
}

impl Default for RobotFaults {
    fn default() -> Self {
        RobotFaults {
            fail_next: 0,
            code: None,
            msg: None,
            http_status_next: 0,
            status: 500,
            latency_ms: 0,
        }
    }
}

impl RobotFaults {
    pub(super) fn validate(&self) -> Result<(), String> {
        if !(400..=599).contains(&self.status) {
            return Err(format!("status {} is not 400 to 599", self.status));
        }
        if self.code == Some(0) {
            return Err("code 0 is success, not a fault".to_owned());
        }
        Ok(())
    }
}

/// Faults of every provider; `GET /_mock/robots/faults`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotFaultSet {
    pub wecom: RobotFaults,
    pub dingtalk: RobotFaults,
    pub feishu: RobotFaults,
}

impl RobotFaultSet {
    pub(super) fn of_mut(&mut self, p: RobotProvider) -> &mut RobotFaults {
        match p {
            RobotProvider::Wecom => &mut self.wecom,
            RobotProvider::Dingtalk => &mut self.dingtalk,
            RobotProvider::Feishu => &mut self.feishu,
        }
    }
}

/// One provider's counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RobotProviderStats {
    /// Sends that reached the mock, whatever their answer.
    pub calls: u64,
    /// Sends answered with success.
    pub accepted: u64,
    /// Error answers by code (injected ones included).
    pub refused: BTreeMap<String, u64>,
    /// Injected transport failures by HTTP status.
    pub http_errors: BTreeMap<String, u64>,
}

/// `GET /_mock/robots/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RobotStats {
    pub wecom: RobotProviderStats,
    pub dingtalk: RobotProviderStats,
    pub feishu: RobotProviderStats,
}

/// One accepted message; `GET /_mock/robots/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RobotMessage {
    pub provider: RobotProvider,
    pub token: String,
    /// `msgtype` (WeCom, DingTalk) or `msg_type` (Feishu).
    pub msgtype: String,
    /// The JSON body as received.
    pub body: Value,
    /// Mock clock (unix ms) when it was accepted.
    pub at_ms: u64,
}
