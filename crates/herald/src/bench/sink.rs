//! The sink: the provider mock the nodes under test deliver to, in this
//! process, where the figures are measured.

use clap::ValueEnum;
use herald_mock::{
    AliyunSmsConfig, HonorConfig, HuaweiConfig, MockConfig, MockServer, OppoConfig, PushMessage,
    PushStats, TencentSmsConfig, VivoConfig, WechatConfig, WecomConfig, XiaomiConfig,
};

/// The kind of channel a scenario delivers through, always to a mock in
/// this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchChannel {
    /// `webhook` to the mock's sink at `/hook`.
    Webhook,
    /// `wechat` template messages to the mock's WeChat API (stable tokens).
    Wechat,
    /// `wecom` text messages to the mock's WeCom API; a campaign sends them
    /// 1,000 recipients to a call.
    Wecom,
    /// `tencent_sms` to the mock's Tencent SMS API (signed, limits
    /// checked); a campaign sends 200 numbers to a call.
    TencentSms,
    /// `aliyun_sms` to the mock's Aliyun SMS API; a campaign sends 1,000
    /// numbers to a call.
    AliyunSms,
    /// `huawei_push` notifications to the mock's Huawei Push Kit (OAuth
    /// token, category `SUBSCRIPTION`); a campaign sends 1,000 device tokens
    /// to a call.
    HuaweiPush,
    /// `xiaomi_push` to the mock's MiPush (app secret, private channel);
    /// a campaign sends 1,000 registration ids to a call.
    XiaomiPush,
    /// `honor_push` to the mock's Honor Push (OAuth token, importance
    /// `NORMAL`); a campaign sends 1,000 device tokens to a call.
    HonorPush,
    /// `oppo_push` to the mock's OPPO Push (signed auth_token, category
    /// `ORDER`); a campaign sends 1,000 messages to a `unicast_batch` call.
    OppoPush,
    /// `vivo_push` to the mock's vivo Push (signed authToken, system
    /// messages); a campaign saves each message once and pushes it to
    /// 1,000 regIds a call.
    VivoPush,
}

/// The mock the server under test delivers to, in this process, and the
/// kind of channel pointed at it. Derefs to the mock, whose webhook figures
/// the webhook-only scenarios read directly.
pub(super) struct Sink {
    mock: MockServer,
    pub(super) channel: BenchChannel,
}

impl std::ops::Deref for Sink {
    type Target = MockServer;
    fn deref(&self) -> &MockServer {
        &self.mock
    }
}

/// A webhook sink.
pub(super) async fn start_sink() -> anyhow::Result<Sink> {
    start_channel_sink(BenchChannel::Webhook, 0).await
}

/// A mock ready to take `n` deliveries through `channel`.
pub(super) async fn start_channel_sink(channel: BenchChannel, n: usize) -> anyhow::Result<Sink> {
    let addr = "127.0.0.1:0".parse()?;
    let mut cfg = MockConfig::default();
    if channel == BenchChannel::HuaweiPush {
        // Huawei's own limit on calls a second grows with the app's monthly
        // users; the bench measures Herald, so the mock does not throttle.
        cfg.huawei.calls_per_second = 0;
    }
    // The same for the other vendors' limits on calls a second.
    cfg.xiaomi.calls_per_second = 0;
    cfg.honor.calls_per_second = 0;
    cfg.oppo.calls_per_second = 0;
    cfg.vivo.calls_per_second = 0;
    if channel == BenchChannel::Wechat {
        let defaults = WechatConfig::default();
        // Room for every timer, so the daily quota never throttles a run.
        cfg.wechat = WechatConfig {
            send_daily_quota: defaults.send_daily_quota.max(2 * n as u64),
            ..defaults
        };
    }
    Ok(Sink {
        mock: MockServer::start(addr, cfg).await?,
        channel,
    })
}

impl BenchChannel {
    /// Timer `i`'s recipient (in the given order) and message, as the JSON
    /// members of a create line.
    pub(super) fn timer_fields_to(self, i: usize, order: Recipients) -> String {
        match self {
            Self::Webhook => format!(
                "\"recipient\":\"{}\",\"message\":{{\"n\":{i}}}",
                order.name("user-", i)
            ),
            Self::Wechat => format!(
                "\"recipient\":\"{}\",\"message\":{{\"template_id\":\"bench-template\",\
                 \"data\":{{\"n\":{{\"value\":\"{i}\"}}}}}}",
                order.name("openid-bench-", i)
            ),
            Self::Wecom => format!(
                "\"recipient\":\"{}\",\"message\":{{\"msgtype\":\"text\",\
                 \"text\":{{\"content\":\"n {i}\"}}}}",
                order.name("user-", i)
            ),
            // Phone numbers stay in order: a number is its digits.
            Self::TencentSms => format!(
                "\"recipient\":\"{}\",\"message\":{{\"params\":[\"{i}\"]}}",
                self.recipient(i)
            ),
            Self::AliyunSms => format!(
                "\"recipient\":\"{}\",\"message\":{{\"params\":{{\"code\":\"{i}\"}}}}",
                self.recipient(i)
            ),
            Self::HuaweiPush
            | Self::XiaomiPush
            | Self::HonorPush
            | Self::OppoPush
            | Self::VivoPush => format!(
                "\"recipient\":\"{}\",\"message\":{{\"notification\":{{\"title\":\"Coupon\",\
                 \"body\":\"n {i}\"}}}}",
                order.name(self.device_prefix(), i)
            ),
        }
    }

    /// How the vendor push kinds' device tokens start.
    fn device_prefix(self) -> &'static str {
        match self {
            Self::XiaomiPush => "xm-device-",
            Self::HonorPush => "hn-device-",
            Self::OppoPush => "op-device-",
            Self::VivoPush => "vv-device-",
            _ => "hw-device-",
        }
    }

    /// Audience member `i`: a phone number for the SMS kinds (distinct up
    /// to 100 million), a name for the others.
    pub(super) fn recipient(self, i: usize) -> String {
        match self {
            Self::TencentSms => format!("+86139{i:08}"),
            Self::AliyunSms => format!("137{i:08}"),
            Self::Webhook | Self::Wechat | Self::Wecom => format!("follower-{i}"),
            Self::HuaweiPush
            | Self::XiaomiPush
            | Self::HonorPush
            | Self::OppoPush
            | Self::VivoPush => format!("{}{i}", self.device_prefix()),
        }
    }

    /// A campaign's message through this kind of channel.
    pub(super) fn job_message(self) -> serde_json::Value {
        match self {
            Self::Webhook | Self::Wechat => {
                serde_json::json!({"template_id": "bench", "data": {"coupon": "20% off"}})
            }
            Self::Wecom => {
                serde_json::json!({"msgtype": "text", "text": {"content": "20% off today"}})
            }
            Self::TencentSms => serde_json::json!({"template": "100001", "params": ["20% off"]}),
            Self::AliyunSms => {
                serde_json::json!({"template": "SMS_100001", "params": {"code": "20% off"}})
            }
            Self::HuaweiPush
            | Self::XiaomiPush
            | Self::HonorPush
            | Self::OppoPush
            | Self::VivoPush => serde_json::json!({
                "notification": {"title": "20% off today", "body": "until midnight"}
            }),
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Webhook => "webhook",
            Self::Wechat => "wechat",
            Self::Wecom => "wecom",
            Self::TencentSms => "tencent_sms",
            Self::AliyunSms => "aliyun_sms",
            Self::HuaweiPush => "huawei_push",
            Self::XiaomiPush => "xiaomi_push",
            Self::HonorPush => "honor_push",
            Self::OppoPush => "oppo_push",
            Self::VivoPush => "vivo_push",
        }
    }
}

impl Sink {
    /// The `[[channels]]` block, named `sink`, of the server under test.
    pub(super) fn channel_toml(&self, concurrency: usize) -> String {
        let settings = match self.channel {
            BenchChannel::Webhook => format!("kind = \"webhook\"\nurl = \"{}\"", self.hook_url()),
            BenchChannel::Wechat => {
                let w = WechatConfig::default();
                format!(
                    "kind = \"wechat\"\napi_base = \"{}\"\nappid = \"{}\"\nsecret = \"{}\"\ntoken_mode = \"stable\"",
                    self.base_url(),
                    w.appid,
                    w.secret
                )
            }
            BenchChannel::Wecom => {
                let w = WecomConfig::default();
                format!(
                    "kind = \"wecom\"\napi_base = \"{}\"\ncorpid = \"{}\"\ncorpsecret = \"{}\"\nagentid = {}",
                    self.base_url(),
                    w.corpid,
                    w.corpsecret,
                    w.agentid
                )
            }
            BenchChannel::TencentSms => {
                let t = TencentSmsConfig::default();
                format!(
                    "kind = \"tencent_sms\"\napi_base = \"{}/tencent\"\nsecret_id = \"{}\"\nsecret_key = \"{}\"\n\
                     sms_sdk_app_id = \"{}\"\nsign_name = \"Herald\"\ntemplate_id = \"100001\"",
                    self.base_url(),
                    t.secret_id,
                    t.secret_key,
                    t.sms_sdk_app_id
                )
            }
            BenchChannel::AliyunSms => {
                let c = AliyunSmsConfig::default();
                format!(
                    "kind = \"aliyun_sms\"\napi_base = \"{}/aliyun\"\naccess_key_id = \"{}\"\n\
                     access_key_secret = \"{}\"\nsign_name = \"Herald\"\ntemplate_code = \"SMS_100001\"",
                    self.base_url(),
                    c.access_key_id,
                    c.access_key_secret
                )
            }
            BenchChannel::HuaweiPush => {
                let h = HuaweiConfig::default();
                format!(
                    "kind = \"huawei_push\"\napi_base = \"{base}\"\ntoken_url = \"{base}/oauth2/v3/token\"\n\
                     app_id = \"{}\"\napp_secret = \"{}\"\ncategory = \"SUBSCRIPTION\"",
                    h.app_id,
                    h.client_secret,
                    base = self.base_url(),
                )
            }
            BenchChannel::XiaomiPush => {
                let x = XiaomiConfig::default();
                format!(
                    "kind = \"xiaomi_push\"\napi_base = \"{}\"\napp_secret = \"{}\"\n\
                     package_name = \"{}\"\nchannel_id = \"{}\"",
                    self.base_url(),
                    x.app_secret,
                    x.package_names.first().map_or("", String::as_str),
                    x.private_channels.first().map_or("", String::as_str),
                )
            }
            BenchChannel::HonorPush => {
                let h = HonorConfig::default();
                format!(
                    "kind = \"honor_push\"\napi_base = \"{base}\"\ntoken_url = \"{base}/auth/token\"\n\
                     app_id = \"{}\"\nclient_id = \"{}\"\nclient_secret = \"{}\"\nimportance = \"NORMAL\"",
                    h.app_id,
                    h.client_id,
                    h.client_secret,
                    base = self.base_url(),
                )
            }
            BenchChannel::OppoPush => {
                let o = OppoConfig::default();
                format!(
                    "kind = \"oppo_push\"\napi_base = \"{}\"\napp_key = \"{}\"\n\
                     master_secret = \"{}\"\ncategory = \"ORDER\"",
                    self.base_url(),
                    o.app_key,
                    o.master_secret,
                )
            }
            BenchChannel::VivoPush => {
                let v = VivoConfig::default();
                format!(
                    "kind = \"vivo_push\"\napi_base = \"{}\"\napp_id = \"{}\"\napp_key = \"{}\"\n\
                     app_secret = \"{}\"\nclassification = 1",
                    self.base_url(),
                    v.app_id,
                    v.app_key,
                    v.app_secret,
                )
            }
        };
        format!("[[channels]]\nname = \"sink\"\n{settings}\nconcurrency = {concurrency}\n")
    }

    /// Deliveries the provider accepted, repeats not counted.
    pub(super) fn delivered(&self) -> u64 {
        match self.channel {
            BenchChannel::Webhook => self.unique_delivered(),
            BenchChannel::Wechat => self.state().wechat_stats().delivered,
            BenchChannel::Wecom => self.state().wecom_stats().delivered_users,
            BenchChannel::TencentSms => self.state().tencent_sms_stats().delivered,
            BenchChannel::AliyunSms => self.state().aliyun_sms_stats().delivered,
            BenchChannel::HuaweiPush => self.state().huawei_stats().delivered,
            _ => self.push_stats().map_or(0, |s| s.delivered),
        }
    }

    /// When the newest delivery arrived (unix ms).
    pub(super) fn last_delivered_ms(&self) -> Option<i64> {
        match self.channel {
            BenchChannel::Webhook => self.stats().last_delivered_at_ms.map(|t| t as i64),
            BenchChannel::Wechat => self
                .state()
                .wechat_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
            BenchChannel::Wecom => self
                .state()
                .wecom_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
            BenchChannel::TencentSms => self
                .state()
                .tencent_sms_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
            BenchChannel::AliyunSms => self
                .state()
                .aliyun_sms_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
            BenchChannel::HuaweiPush => self
                .state()
                .huawei_messages(1, None)
                .last()
                .map(|m| m.at_ms as i64),
            _ => self.push_messages(1).last().map(|m| m.at_ms as i64),
        }
    }

    /// When the first delivery arrived (unix ms), where the mock records it.
    pub(super) fn first_delivered_ms(&self) -> Option<i64> {
        match self.channel {
            BenchChannel::Webhook => self.stats().first_delivered_at_ms.map(|t| t as i64),
            BenchChannel::Wechat
            | BenchChannel::Wecom
            | BenchChannel::TencentSms
            | BenchChannel::AliyunSms
            | BenchChannel::HuaweiPush
            | BenchChannel::XiaomiPush
            | BenchChannel::HonorPush
            | BenchChannel::OppoPush
            | BenchChannel::VivoPush => None,
        }
    }

    /// The counters of a Xiaomi, Honor, OPPO or vivo mock; `None` for the
    /// other kinds.
    pub(super) fn push_stats(&self) -> Option<PushStats> {
        let s = self.state();
        match self.channel {
            BenchChannel::XiaomiPush => Some(s.xiaomi_stats()),
            BenchChannel::HonorPush => Some(s.honor_stats()),
            BenchChannel::OppoPush => Some(s.oppo_stats()),
            BenchChannel::VivoPush => Some(s.vivo_stats()),
            _ => None,
        }
    }

    /// The newest `limit` device messages such a mock delivered.
    fn push_messages(&self, limit: usize) -> Vec<PushMessage> {
        let s = self.state();
        match self.channel {
            BenchChannel::XiaomiPush => s.xiaomi_messages(limit, None),
            BenchChannel::HonorPush => s.honor_messages(limit, None),
            BenchChannel::OppoPush => s.oppo_messages(limit, None),
            BenchChannel::VivoPush => s.vivo_messages(limit, None),
            _ => Vec::new(),
        }
    }
}

/// The order of the recipients of a run's timers. In order (`user-1`,
/// `user-2`, ...) every index over the recipient grows at its end; scattered
/// (as WeChat openids or phone tokens arrive) each new timer lands on a
/// random page of such an index, which is what a real audience costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Recipients {
    #[default]
    Sequential,
    Scattered,
}

impl Recipients {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Scattered => "scattered",
        }
    }

    /// Recipient `i` with `prefix`: `prefix` and `i`, or `prefix` and a
    /// 64-bit mix of `i` (a bijection, so names stay distinct and a run
    /// repeats exactly).
    pub(super) fn name(self, prefix: &str, i: usize) -> String {
        match self {
            Self::Sequential => format!("{prefix}{i}"),
            Self::Scattered => format!("{prefix}{:016x}", mix(i as u64)),
        }
    }
}

/// splitmix64's finalizer: a bijection of `u64` that scatters neighbours.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
