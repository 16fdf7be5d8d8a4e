//! A subscriber's app devices: a push token, and the push service that
//! issued it. In mainland China most Android phones are reached through the
//! phone maker's own service (Huawei, Honor, Xiaomi, OPPO, vivo), not FCM, so
//! one user's phone and tablet may need two different services; an `app`
//! send goes to each device through a channel of its own service.
//!
//! A plain string is a token of whichever service the send's channel
//! speaks: what `addresses.app` held before services existed, so stored
//! profiles and old callers keep working.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// A push service that issues device tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PushService {
    /// Firebase Cloud Messaging.
    Fcm,
    /// Huawei Push Kit.
    Huawei,
    /// Honor Push.
    Honor,
    /// Xiaomi MiPush.
    Xiaomi,
    /// OPPO Push.
    Oppo,
    /// vivo Push.
    Vivo,
}

impl PushService {
    /// Every service, in the order docs list them.
    pub const ALL: [PushService; 6] = [
        PushService::Fcm,
        PushService::Huawei,
        PushService::Honor,
        PushService::Xiaomi,
        PushService::Oppo,
        PushService::Vivo,
    ];

    /// The name `addresses.app[].service` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PushService::Fcm => "fcm",
            PushService::Huawei => "huawei",
            PushService::Honor => "honor",
            PushService::Xiaomi => "xiaomi",
            PushService::Oppo => "oppo",
            PushService::Vivo => "vivo",
        }
    }
}

impl fmt::Display for PushService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `addresses.app`: a bare token, or a token with its service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberDevice))]
#[serde(untagged)]
pub enum Device {
    /// A token of the service the send's channel speaks.
    Token(String),
    /// A token and the service that issued it.
    Of(ServiceToken),
}

/// A device token and the push service that issued it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SubscriberServiceToken))]
#[serde(deny_unknown_fields)]
pub struct ServiceToken {
    pub service: PushService,
    pub token: String,
}

impl Device {
    /// A device of `service`.
    pub fn of(service: PushService, token: impl Into<String>) -> Self {
        Device::Of(ServiceToken {
            service,
            token: token.into(),
        })
    }

    /// The push token.
    pub fn token(&self) -> &str {
        match self {
            Device::Token(t) => t,
            Device::Of(s) => &s.token,
        }
    }

    /// The service that issued the token; `None` for a bare token.
    pub fn service(&self) -> Option<PushService> {
        match self {
            Device::Token(_) => None,
            Device::Of(s) => Some(s.service),
        }
    }
}

impl From<&str> for Device {
    fn from(t: &str) -> Self {
        Device::Token(t.to_string())
    }
}

impl PartialEq<&str> for Device {
    fn eq(&self, other: &&str) -> bool {
        matches!(self, Device::Token(t) if t == other)
    }
}

// By hand rather than `untagged`, so a wrong entry says what is wrong with
// it (an unknown service names the known ones) instead of "did not match
// any variant".
impl<'de> Deserialize<'de> for Device {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Device;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(r#"a device token, or {"service": ..., "token": ...}"#)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Device, E> {
                Ok(Device::Token(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Device, E> {
                Ok(Device::Token(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Device, A::Error> {
                ServiceToken::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(Device::Of)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_and_serviced_tokens_round_trip() {
        let v: Vec<Device> =
            serde_json::from_str(r#"["t1",{"service":"huawei","token":"t2"}]"#).unwrap();
        assert_eq!(v[0], Device::Token("t1".into()));
        assert_eq!(v[1], Device::of(PushService::Huawei, "t2"));
        assert_eq!(v[1].token(), "t2");
        assert_eq!(v[1].service(), Some(PushService::Huawei));
        assert_eq!(v[0].service(), None);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"["t1",{"service":"huawei","token":"t2"}]"#
        );
    }

    #[test]
    fn a_wrong_entry_says_what_is_wrong() {
        let e = serde_json::from_str::<Device>(r#"{"service":"nokia","token":"t"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nokia") && e.contains("xiaomi"), "{e}");
        let e = serde_json::from_str::<Device>(r#"{"service":"vivo"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("token"), "{e}");
        let e = serde_json::from_str::<Device>(r#"{"service":"vivo","token":"t","x":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("x"), "{e}");
        let e = serde_json::from_str::<Device>("7").unwrap_err().to_string();
        assert!(e.contains("device token"), "{e}");
    }

    #[test]
    fn every_service_is_named_as_serde_names_it() {
        for s in PushService::ALL {
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
    }
}
