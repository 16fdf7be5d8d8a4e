//! Reminder subscriptions as one `u64` per (user, subject).
//!
//! Five channel types with up to twelve lead slots each fill 60 bits: type
//! `t` and the lead at position `i` of the configured [`Leads`] live at bit
//! `t * 12 + i` (by default the leads are 5, 10, ... 60 minutes, so lead `m`
//! is at `t * 12 + m / 5 - 1`). A duplicate subscription is then one AND, and
//! a user's whole interest in a subject is one row. The sixth type,
//! `wechat_mini`, came last and has only the top four bits: its reminders
//! take the first [`WECHAT_MINI_LEADS`] configured leads.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Lead slots per channel type.
pub const LEADS_PER_TYPE: u8 = 12;
/// Minutes between the default lead slots.
pub const LEAD_STEP_MINUTES: u8 = 5;
/// Longest default lead, in minutes.
pub const MAX_LEAD_MINUTES: u8 = LEADS_PER_TYPE * LEAD_STEP_MINUTES;
/// Longest lead a configuration may name: a day.
pub const MAX_CONFIGURED_LEAD_MINUTES: u16 = 24 * 60;
/// Lead slots of the last type, `wechat_mini`: the four bits left above the
/// other five types' sixty.
pub const WECHAT_MINI_LEADS: u8 = 4;
/// Every bit a subscription can set: all 64.
pub const ALL_BITS: u64 = u64::MAX;

/// How the user wants to be reminded. The order is the bit layout: do not
/// reorder, only append (and only while the bits still fit in 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelType {
    /// A push notification to the user's app.
    App,
    Email,
    Sms,
    /// A WeChat official-account template message.
    Wechat,
    /// A WeCom (enterprise WeChat) application message.
    Wecom,
    /// A WeChat mini-program subscribe message (one per grant the user gave).
    WechatMini,
}

impl ChannelType {
    pub const ALL: [ChannelType; 6] = [
        ChannelType::App,
        ChannelType::Email,
        ChannelType::Sms,
        ChannelType::Wechat,
        ChannelType::Wecom,
        ChannelType::WechatMini,
    ];

    /// Position in the bitmap (0..=5).
    pub fn index(self) -> u8 {
        self as u8
    }

    pub fn from_index(i: u8) -> Option<Self> {
        Self::ALL.get(usize::from(i)).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ChannelType::App => "app",
            ChannelType::Email => "email",
            ChannelType::Sms => "sms",
            ChannelType::Wechat => "wechat",
            ChannelType::Wecom => "wecom",
            ChannelType::WechatMini => "wechat_mini",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for ChannelType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a (type, lead) pair has no bit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    #[error("lead_minutes must be one of {allowed}, got {got}")]
    Lead { got: i64, allowed: String },
    #[error("bit {0} is outside the reminder bits")]
    Bit(u8),
}

/// The lead times a reminder may take, in minutes before the start, in bit
/// order: position `i` is bit `t * 12 + i` of every type `t`. Stored
/// subscriptions mean these positions, so a configuration may only append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leads(Vec<u16>);

/// Why a lead list cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LeadsError(String);

impl Default for Leads {
    /// 5, 10, ... 60 minutes.
    fn default() -> Self {
        Self(
            (1..=u16::from(LEADS_PER_TYPE))
                .map(|i| i * u16::from(LEAD_STEP_MINUTES))
                .collect(),
        )
    }
}

impl Leads {
    /// 1 to 12 distinct leads of 0 ("at the start") to a day.
    pub fn new(minutes: Vec<u16>) -> Result<Self, LeadsError> {
        if minutes.is_empty() || minutes.len() > usize::from(LEADS_PER_TYPE) {
            return Err(LeadsError(format!(
                "1 to {LEADS_PER_TYPE} leads, got {}",
                minutes.len()
            )));
        }
        if let Some(m) = minutes.iter().find(|&&m| m > MAX_CONFIGURED_LEAD_MINUTES) {
            return Err(LeadsError(format!(
                "a lead is at most {MAX_CONFIGURED_LEAD_MINUTES} minutes, got {m}"
            )));
        }
        for (i, m) in minutes.iter().enumerate() {
            if minutes[..i].contains(m) {
                return Err(LeadsError(format!("lead {m} is listed twice")));
            }
        }
        Ok(Self(minutes))
    }

    pub fn minutes(&self) -> &[u16] {
        &self.0
    }

    /// Whether `self` keeps every position of `before` (same leads, same
    /// order, possibly more after): subscriptions stored under `before` mean
    /// the same under `self`.
    pub fn extends(&self, before: &Leads) -> bool {
        self.0.starts_with(&before.0)
    }

    /// The leads type `t` may take: all of them, but only the first
    /// [`WECHAT_MINI_LEADS`] for `wechat_mini`.
    fn of_type(&self, t: ChannelType) -> &[u16] {
        match t {
            ChannelType::WechatMini => &self.0[..self.0.len().min(usize::from(WECHAT_MINI_LEADS))],
            _ => &self.0,
        }
    }

    fn refuse(&self, t: ChannelType, got: i64) -> SlotError {
        SlotError::Lead {
            got,
            allowed: format!("{:?}", self.of_type(t)),
        }
    }
}

/// One reminder: a channel type and a lead time. Always a valid bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot {
    channel_type: ChannelType,
    /// Position of the lead in its [`Leads`].
    index: u8,
    lead_minutes: u16,
}

impl Slot {
    /// Checks the lead against the default leads (5..=60, a multiple of 5).
    pub fn new(channel_type: ChannelType, lead_minutes: i64) -> Result<Self, SlotError> {
        Self::with_leads(channel_type, lead_minutes, &Leads::default())
    }

    /// Checks the lead against `leads`.
    pub fn with_leads(
        channel_type: ChannelType,
        lead_minutes: i64,
        leads: &Leads,
    ) -> Result<Self, SlotError> {
        let index = leads
            .of_type(channel_type)
            .iter()
            .position(|&m| i64::from(m) == lead_minutes)
            .ok_or_else(|| leads.refuse(channel_type, lead_minutes))?;
        Ok(Self {
            channel_type,
            index: index as u8,
            lead_minutes: leads.0[index],
        })
    }

    pub fn channel_type(self) -> ChannelType {
        self.channel_type
    }

    pub fn lead_minutes(self) -> u16 {
        self.lead_minutes
    }

    /// The lead as milliseconds before the subject's start.
    pub fn lead_ms(self) -> i64 {
        i64::from(self.lead_minutes) * 60_000
    }

    /// `t * 12 + i`.
    pub fn bit(self) -> u8 {
        self.channel_type.index() * LEADS_PER_TYPE + self.index
    }

    /// The single-bit mask of this slot.
    pub fn mask(self) -> u64 {
        1u64 << self.bit()
    }

    /// The slot of `bit` under the default leads.
    pub fn from_bit(bit: u8) -> Result<Self, SlotError> {
        Self::from_bit_with(bit, &Leads::default())
    }

    /// The slot of `bit` under `leads`.
    pub fn from_bit_with(bit: u8, leads: &Leads) -> Result<Self, SlotError> {
        let t = ChannelType::from_index(bit / LEADS_PER_TYPE).ok_or(SlotError::Bit(bit))?;
        let index = bit % LEADS_PER_TYPE;
        let lead_minutes = *leads
            .of_type(t)
            .get(usize::from(index))
            .ok_or(SlotError::Bit(bit))?;
        Ok(Self {
            channel_type: t,
            index,
            lead_minutes,
        })
    }
}

/// The slots set in `bits` under the default leads, lowest bit first.
pub fn decode(bits: u64) -> impl Iterator<Item = Slot> {
    decode_with(bits, &Leads::default())
        .collect::<Vec<_>>()
        .into_iter()
}

/// The slots set in `bits` under `leads`, lowest bit first. Bits no lead
/// names are ignored.
pub fn decode_with(bits: u64, leads: &Leads) -> impl Iterator<Item = Slot> + '_ {
    let bits = bits & ALL_BITS;
    (0..64u8)
        .filter(move |b| bits & (1u64 << b) != 0)
        .filter_map(|b| Slot::from_bit_with(b, leads).ok())
}

/// The bits of `slots`.
pub fn encode(slots: impl IntoIterator<Item = Slot>) -> u64 {
    slots.into_iter().fold(0, |acc, s| acc | s.mask())
}

/// Bits a cancel clears under the default leads.
pub fn cancel_mask(
    channel_type: Option<ChannelType>,
    lead_minutes: Option<i64>,
) -> Result<u64, SlotError> {
    cancel_mask_with(channel_type, lead_minutes, &Leads::default())
}

/// Bits a cancel clears: one slot, every lead of one type, or everything.
pub fn cancel_mask_with(
    channel_type: Option<ChannelType>,
    lead_minutes: Option<i64>,
    leads: &Leads,
) -> Result<u64, SlotError> {
    Ok(match (channel_type, lead_minutes) {
        (Some(t), Some(m)) => Slot::with_leads(t, m, leads)?.mask(),
        (Some(t), None) => ((1u64 << LEADS_PER_TYPE) - 1) << (t.index() * LEADS_PER_TYPE),
        (None, Some(m)) => {
            // The same lead on every type.
            let one = Slot::with_leads(ChannelType::App, m, leads)?;
            ChannelType::ALL.into_iter().fold(0, |acc, t| {
                acc | (one.mask() << (t.index() * LEADS_PER_TYPE))
            })
        }
        (None, None) => ALL_BITS,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn layout_is_type_times_twelve_plus_lead_slot() {
        // Type 0, 5 minutes: bit 0; type 0, 60 minutes: bit 11; type 4, 60: bit 59.
        assert_eq!(Slot::new(ChannelType::App, 5).unwrap().bit(), 0);
        assert_eq!(Slot::new(ChannelType::App, 60).unwrap().bit(), 11);
        assert_eq!(Slot::new(ChannelType::Email, 5).unwrap().bit(), 12);
        assert_eq!(Slot::new(ChannelType::Email, 15).unwrap().bit(), 14);
        assert_eq!(Slot::new(ChannelType::Wecom, 60).unwrap().bit(), 59);
        assert_eq!(Slot::new(ChannelType::WechatMini, 20).unwrap().bit(), 63);
        assert_eq!(ALL_BITS, u64::MAX);
    }

    #[test]
    fn configured_leads_take_their_positions_as_bits() {
        let leads = Leads::new(vec![0, 1, 5, 10, 15, 30, 60]).unwrap();
        let at_start = Slot::with_leads(ChannelType::App, 0, &leads).unwrap();
        assert_eq!((at_start.bit(), at_start.lead_ms()), (0, 0));
        let one = Slot::with_leads(ChannelType::Email, 1, &leads).unwrap();
        assert_eq!(one.bit(), 13);
        assert_eq!(Slot::from_bit_with(13, &leads).unwrap(), one);
        assert_eq!(Slot::from_bit_with(6, &leads).unwrap().lead_minutes(), 60);
        // Positions 7..12 name no lead here.
        assert_eq!(Slot::from_bit_with(7, &leads), Err(SlotError::Bit(7)));
        let e = Slot::with_leads(ChannelType::App, 20, &leads).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lead_minutes must be one of [0, 1, 5, 10, 15, 30, 60], got 20"
        );
        let slots: Vec<u16> = decode_with(0b1000001, &leads)
            .map(|s| s.lead_minutes())
            .collect();
        assert_eq!(slots, [0, 60]);
        assert_eq!(
            cancel_mask_with(None, Some(1), &leads).unwrap(),
            (0..6).fold(0u64, |m, t| m | (1 << (t * 12 + 1)))
        );
        // The default is the historical grid.
        assert_eq!(Leads::default().minutes()[0], 5);
        assert_eq!(Leads::default().minutes().len(), 12);
    }

    #[test]
    fn lead_lists_are_checked_and_may_only_grow_at_the_end() {
        assert!(Leads::new(vec![]).is_err());
        assert!(Leads::new((0..13).collect()).is_err());
        assert!(Leads::new(vec![5, 5]).is_err());
        assert!(Leads::new(vec![1441]).is_err());
        let old = Leads::new(vec![5, 10]).unwrap();
        assert!(Leads::new(vec![5, 10, 0]).unwrap().extends(&old));
        assert!(old.extends(&old));
        assert!(!Leads::new(vec![0, 5, 10]).unwrap().extends(&old));
        assert!(!Leads::new(vec![5]).unwrap().extends(&old));
    }

    #[test]
    fn leads_outside_the_grid_are_refused() {
        for bad in [-5, 0, 1, 4, 6, 59, 61, 65, 120, i64::MAX, i64::MIN] {
            assert!(
                matches!(Slot::new(ChannelType::Sms, bad), Err(SlotError::Lead { got, .. }) if got == bad),
                "{bad}"
            );
        }
        // The top four bits are wechat_mini's, with the first four leads.
        let mini = Slot::from_bit(63).unwrap();
        assert_eq!(
            (mini.channel_type(), mini.lead_minutes()),
            (ChannelType::WechatMini, 20)
        );
        assert_eq!(Slot::new(ChannelType::WechatMini, 5).unwrap().bit(), 60);
        assert!(matches!(
            Slot::new(ChannelType::WechatMini, 25),
            Err(SlotError::Lead { got: 25, ref allowed }) if allowed == "[5, 10, 15, 20]"
        ));
    }

    #[test]
    fn every_bit_round_trips() {
        let mut seen = 0u64;
        for t in ChannelType::ALL {
            let last = if t == ChannelType::WechatMini { 20 } else { 60 };
            for m in (5..=last).step_by(5) {
                let s = Slot::new(t, m).unwrap();
                assert_eq!(seen & s.mask(), 0, "two slots share bit {}", s.bit());
                seen |= s.mask();
                assert_eq!(Slot::from_bit(s.bit()).unwrap(), s);
                assert_eq!(i64::from(s.lead_minutes()), m);
                assert_eq!(s.lead_ms(), m * 60_000);
            }
        }
        assert_eq!(seen, ALL_BITS);
    }

    #[test]
    fn channel_types_parse_their_names_only() {
        for t in ChannelType::ALL {
            assert_eq!(ChannelType::parse(t.as_str()), Some(t));
            assert_eq!(ChannelType::from_index(t.index()), Some(t));
        }
        assert_eq!(ChannelType::parse("App"), None);
        assert_eq!(ChannelType::parse("push"), None);
        assert_eq!(ChannelType::from_index(6), None);
    }

    #[test]
    fn cancel_masks() {
        let email = cancel_mask(Some(ChannelType::Email), None).unwrap();
        assert_eq!(email.count_ones(), 12);
        assert!(decode(email).all(|s| s.channel_type() == ChannelType::Email));
        let ten = cancel_mask(None, Some(10)).unwrap();
        assert_eq!(ten.count_ones(), 6);
        let mini = cancel_mask(Some(ChannelType::WechatMini), None).unwrap();
        assert_eq!(mini, 0xF << 60);
        assert_eq!(cancel_mask(None, Some(30)).unwrap().count_ones(), 5);
        assert!(decode(ten).all(|s| s.lead_minutes() == 10));
        assert_eq!(cancel_mask(None, None).unwrap(), ALL_BITS);
        assert!(matches!(
            cancel_mask(None, Some(7)),
            Err(SlotError::Lead { got: 7, .. })
        ));
    }

    fn slot() -> impl Strategy<Value = Slot> {
        (0u8..64).prop_map(|b| Slot::from_bit(b).unwrap())
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(bits in any::<u64>()) {
            let valid = bits & ALL_BITS;
            prop_assert_eq!(encode(decode(bits)), valid);
            prop_assert_eq!(decode(bits).count() as u32, valid.count_ones());
        }

        #[test]
        fn adding_a_slot_conflicts_exactly_when_it_is_set(bits in any::<u64>(), s in slot()) {
            let bits = bits & ALL_BITS;
            let conflict = bits & s.mask() != 0;
            prop_assert_eq!(conflict, decode(bits).any(|x| x == s));
            let added = bits | s.mask();
            prop_assert!(decode(added).any(|x| x == s));
            // Clearing it again leaves every other slot as it was.
            let cleared = added & !s.mask();
            prop_assert_eq!(cleared, bits & !s.mask());
            prop_assert!(decode(cleared).all(|x| x != s));
        }

        #[test]
        fn decode_is_ordered_and_valid(bits in any::<u64>()) {
            let slots: Vec<Slot> = decode(bits).collect();
            prop_assert!(slots.windows(2).all(|w| w[0].bit() < w[1].bit()));
            for s in slots {
                prop_assert!(s.bit() < 60 || s.channel_type() == ChannelType::WechatMini);
                prop_assert_eq!(s.lead_minutes() % 5, 0);
                prop_assert!((5..=60).contains(&s.lead_minutes()));
            }
        }
    }
}
