//! How `/v1/channels`, provider callbacks, recalls and receipts are
//! documented: one doc per handler, named after it (`LIST` for
//! [`super::list`]), and for an action route one per action; the route table
//! (`crate::routes`) names each beside its route.

use crate::openapi::operations::{ActionDoc, Answer, Doc, Tag};
use Answer::{Json as J, Text};

const fn doc(summary: &'static str, ok: &'static [(u16, Answer)]) -> Doc {
    Doc::new(Tag::Channels, summary, ok)
}

const CHANNEL: &[(u16, Answer)] = &[(200, J("Channel"))];

pub(crate) const LIST: Doc = doc(
    "Every channel with its state, outcomes and rate",
    &[(200, J("ChannelList"))],
);
/// `:pause` (an optional JSON body), `:resume`.
pub(crate) const PAUSE_ACTIONS: &[ActionDoc] = &[
    doc("Hold a channel's deliveries, cluster-wide", CHANNEL)
        .action("pause")
        .optional_body("PauseRequest"),
    doc("Resume a paused channel", CHANNEL).action("resume"),
];
pub(crate) const HANDSHAKE: Doc = doc(
    "The provider's URL check (echoes its challenge)",
    &[(200, Text)],
);
pub(crate) const CALLBACK: Doc = doc("A provider's delivery report", &[(200, Text)]);
/// `POST /v1/deliveries/{id}:recall`.
pub(crate) const ACTIONS: &[ActionDoc] = &[doc(
    "Recall a delivered message at the provider",
    &[(200, J("Recalled"))],
)
.action("recall")];
pub(crate) const RECEIPT: Doc = doc(
    "Record that a sent message was delivered, read or clicked",
    &[(200, J("ReceiptJson"))],
);
