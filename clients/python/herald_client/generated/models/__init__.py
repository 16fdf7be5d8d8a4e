"""Contains all the data models used in inputs/outputs"""

from .actor_json import ActorJson
from .audience_json import AudienceJson
from .audience_list import AudienceList
from .audience_target import AudienceTarget
from .audit_list import AuditList
from .bulk_line_result import BulkLineResult
from .calendar_json import CalendarJson
from .calendar_list import CalendarList
from .calendar_spec import CalendarSpec
from .calendar_spec_years import CalendarSpecYears
from .campaign_to import CampaignTo
from .campaign_to_channel_type_type_1 import CampaignToChannelTypeType1
from .campaign_to_channel_type_type_2_type_1 import CampaignToChannelTypeType2Type1
from .campaign_to_channel_type_type_3_type_1 import CampaignToChannelTypeType3Type1
from .channel import Channel
from .channel_list import ChannelList
from .channel_live import ChannelLive
from .channel_live_outcomes import ChannelLiveOutcomes
from .channel_outcomes import ChannelOutcomes
from .channel_pause import ChannelPause
from .channel_token import ChannelToken
from .cluster import Cluster
from .cluster_owners import ClusterOwners
from .counts_json import CountsJson
from .create_key import CreateKey
from .create_key_scopes_item import CreateKeyScopesItem
from .create_template import CreateTemplate
from .create_template_locales import CreateTemplateLocales
from .create_timer import CreateTimer
from .create_timer_message_type_0 import CreateTimerMessageType0
from .dead_letter_group import DeadLetterGroup
from .dead_letters import DeadLetters
from .deletev_1_reminders_user_id_subject_id_channel_type import (
    Deletev1RemindersUserIdSubjectIdChannelType,
)
from .delivery_json import DeliveryJson
from .delivery_list import DeliveryList
from .digest_json import DigestJson
from .early_start_json import EarlyStartJson
from .entry_json import EntryJson
from .error_body import ErrorBody
from .error_count_json import ErrorCountJson
from .error_response import ErrorResponse
from .failed_reminder_json import FailedReminderJson
from .failure_group import FailureGroup
from .follow_up_body import FollowUpBody
from .follow_up_body_message import FollowUpBodyMessage
from .follow_up_body_only import FollowUpBodyOnly
from .follow_up_json import FollowUpJson
from .forecast import Forecast
from .forecast_behind import ForecastBehind
from .forecast_channel import ForecastChannel
from .getopenapi_json_response_200 import GetopenapiJsonResponse200
from .getv_1_audit_order import Getv1AuditOrder
from .getv_1_forecast_horizon import Getv1ForecastHorizon
from .getv_1_jobs_id_sends_outcome import Getv1JobsIdSendsOutcome
from .getv_1_reports_group_by_item import Getv1ReportsGroupByItem
from .getv_1_timers_kind import Getv1TimersKind
from .getv_1_timers_order import Getv1TimersOrder
from .getv_1_timers_state import Getv1TimersState
from .grant_entry import GrantEntry
from .grant_json import GrantJson
from .grant_list import GrantList
from .grants_body import GrantsBody
from .grants_recorded_json import GrantsRecordedJson
from .job_body import JobBody
from .job_body_message_type_0 import JobBodyMessageType0
from .job_failures import JobFailures
from .job_json import JobJson
from .job_json_message import JobJsonMessage
from .job_json_segments import JobJsonSegments
from .job_list import JobList
from .job_recalled import JobRecalled
from .job_retried import JobRetried
from .key_created import KeyCreated
from .key_json import KeyJson
from .key_list import KeyList
from .lateness import Lateness
from .lease import Lease
from .live import Live
from .live_point import LivePoint
from .node_figures import NodeFigures
from .node_leases import NodeLeases
from .node_live import NodeLive
from .node_shards import NodeShards
from .on_conflict import OnConflict
from .outcomes_json import OutcomesJson
from .outcomes_json_by_state import OutcomesJsonByState
from .overview import Overview
from .overview_timers import OverviewTimers
from .pause_request import PauseRequest
from .postv_1_channels_name_callback_json_body_item import (
    Postv1ChannelsNameCallbackJsonBodyItem,
)
from .preview import Preview
from .preview_request import PreviewRequest
from .preview_request_schedule import PreviewRequestSchedule
from .push_service import PushService
from .recalled import Recalled
from .receipt_body import ReceiptBody
from .receipt_body_event import ReceiptBodyEvent
from .receipt_json import ReceiptJson
from .recipient_line import RecipientLine
from .reload_report import ReloadReport
from .reminder_body import ReminderBody
from .reminder_body_channel_type import ReminderBodyChannelType
from .reminder_grant import ReminderGrant
from .reminder_group_json import ReminderGroupJson
from .reminder_json import ReminderJson
from .reminder_slot import ReminderSlot
from .reminders_cancelled import RemindersCancelled
from .report import Report
from .report_row_json import ReportRowJson
from .resend_body import ResendBody
from .resend_body_message_type_0 import ResendBodyMessageType0
from .retried import Retried
from .retry_filter import RetryFilter
from .retry_state import RetryState
from .route_step import RouteStep
from .route_step_message_type_0 import RouteStepMessageType0
from .routing_json import RoutingJson
from .rule_body import RuleBody
from .rule_body_message_type_0 import RuleBodyMessageType0
from .rule_body_schedule import RuleBodySchedule
from .rule_follow_up_json import RuleFollowUpJson
from .rule_follow_up_json_message import RuleFollowUpJsonMessage
from .rule_json import RuleJson
from .rule_json_audience import RuleJsonAudience
from .rule_json_message import RuleJsonMessage
from .rule_json_schedule import RuleJsonSchedule
from .rule_list import RuleList
from .segment_json import SegmentJson
from .segment_list import SegmentList
from .send_json import SendJson
from .send_list import SendList
from .stats import Stats
from .stats_timers import StatsTimers
from .status import Status
from .step_json import StepJson
from .step_on_name import StepOnName
from .subject_body import SubjectBody
from .subject_body_data_type_0 import SubjectBodyDataType0
from .subject_body_templates_type_0 import SubjectBodyTemplatesType0
from .subject_detail_json import SubjectDetailJson
from .subject_json import SubjectJson
from .subject_json_data_type_0 import SubjectJsonDataType0
from .subject_json_templates_type_0 import SubjectJsonTemplatesType0
from .subject_list import SubjectList
from .subject_summary_json import SubjectSummaryJson
from .subscriber_addresses import SubscriberAddresses
from .subscriber_addresses_webhook_type_0 import SubscriberAddressesWebhookType0
from .subscriber_addresses_wechat import SubscriberAddressesWechat
from .subscriber_addresses_wechat_mini import SubscriberAddressesWechatMini
from .subscriber_body import SubscriberBody
from .subscriber_json import SubscriberJson
from .subscriber_line import SubscriberLine
from .subscriber_list import SubscriberList
from .subscriber_patch import SubscriberPatch
from .subscriber_patch_addresses_type_0 import SubscriberPatchAddressesType0
from .subscriber_patch_preferences_type_0 import SubscriberPatchPreferencesType0
from .subscriber_preferences import SubscriberPreferences
from .subscriber_preferences_channel_types import SubscriberPreferencesChannelTypes
from .subscriber_preferences_topics import SubscriberPreferencesTopics
from .subscriber_quiet_hours import SubscriberQuietHours
from .subscriber_service_token import SubscriberServiceToken
from .task_job_json import TaskJobJson
from .task_json import TaskJson
from .task_list import TaskList
from .template_body import TemplateBody
from .template_body_locales import TemplateBodyLocales
from .template_json import TemplateJson
from .template_json_locales import TemplateJsonLocales
from .template_list import TemplateList
from .template_preview import TemplatePreview
from .template_preview_data_type_0 import TemplatePreviewDataType0
from .template_preview_json import TemplatePreviewJson
from .template_preview_json_errors import TemplatePreviewJsonErrors
from .template_preview_json_parts import TemplatePreviewJsonParts
from .template_ref import TemplateRef
from .template_use import TemplateUse
from .template_use_data_type_0 import TemplateUseDataType0
from .timer_digest import TimerDigest
from .timer_json import TimerJson
from .timer_json_message_type_0 import TimerJsonMessageType0
from .timer_list import TimerList
from .timer_patch import TimerPatch
from .timer_patch_message_type_0 import TimerPatchMessageType0
from .timer_to import TimerTo
from .to_json import ToJson
from .to_type_json import ToTypeJson
from .totals_json import TotalsJson
from .user_reminder import UserReminder
from .user_reminders import UserReminders
from .user_send_json import UserSendJson
from .user_subject import UserSubject
from .user_view import UserView
from .version_json import VersionJson
from .version_json_audience import VersionJsonAudience
from .version_json_message import VersionJsonMessage
from .version_json_schedule import VersionJsonSchedule
from .version_list import VersionList
from .year_spec import YearSpec

__all__ = (
    "ActorJson",
    "AudienceJson",
    "AudienceList",
    "AudienceTarget",
    "AuditList",
    "BulkLineResult",
    "CalendarJson",
    "CalendarList",
    "CalendarSpec",
    "CalendarSpecYears",
    "CampaignTo",
    "CampaignToChannelTypeType1",
    "CampaignToChannelTypeType2Type1",
    "CampaignToChannelTypeType3Type1",
    "Channel",
    "ChannelList",
    "ChannelLive",
    "ChannelLiveOutcomes",
    "ChannelOutcomes",
    "ChannelPause",
    "ChannelToken",
    "Cluster",
    "ClusterOwners",
    "CountsJson",
    "CreateKey",
    "CreateKeyScopesItem",
    "CreateTemplate",
    "CreateTemplateLocales",
    "CreateTimer",
    "CreateTimerMessageType0",
    "DeadLetterGroup",
    "DeadLetters",
    "Deletev1RemindersUserIdSubjectIdChannelType",
    "DeliveryJson",
    "DeliveryList",
    "DigestJson",
    "EarlyStartJson",
    "EntryJson",
    "ErrorBody",
    "ErrorCountJson",
    "ErrorResponse",
    "FailedReminderJson",
    "FailureGroup",
    "FollowUpBody",
    "FollowUpBodyMessage",
    "FollowUpBodyOnly",
    "FollowUpJson",
    "Forecast",
    "ForecastBehind",
    "ForecastChannel",
    "GetopenapiJsonResponse200",
    "Getv1AuditOrder",
    "Getv1ForecastHorizon",
    "Getv1JobsIdSendsOutcome",
    "Getv1ReportsGroupByItem",
    "Getv1TimersKind",
    "Getv1TimersOrder",
    "Getv1TimersState",
    "GrantEntry",
    "GrantJson",
    "GrantList",
    "GrantsBody",
    "GrantsRecordedJson",
    "JobBody",
    "JobBodyMessageType0",
    "JobFailures",
    "JobJson",
    "JobJsonMessage",
    "JobJsonSegments",
    "JobList",
    "JobRecalled",
    "JobRetried",
    "KeyCreated",
    "KeyJson",
    "KeyList",
    "Lateness",
    "Lease",
    "Live",
    "LivePoint",
    "NodeFigures",
    "NodeLeases",
    "NodeLive",
    "NodeShards",
    "OnConflict",
    "OutcomesJson",
    "OutcomesJsonByState",
    "Overview",
    "OverviewTimers",
    "PauseRequest",
    "Postv1ChannelsNameCallbackJsonBodyItem",
    "Preview",
    "PreviewRequest",
    "PreviewRequestSchedule",
    "PushService",
    "Recalled",
    "ReceiptBody",
    "ReceiptBodyEvent",
    "ReceiptJson",
    "RecipientLine",
    "ReloadReport",
    "ReminderBody",
    "ReminderBodyChannelType",
    "ReminderGrant",
    "ReminderGroupJson",
    "ReminderJson",
    "ReminderSlot",
    "RemindersCancelled",
    "Report",
    "ReportRowJson",
    "ResendBody",
    "ResendBodyMessageType0",
    "Retried",
    "RetryFilter",
    "RetryState",
    "RouteStep",
    "RouteStepMessageType0",
    "RoutingJson",
    "RuleBody",
    "RuleBodyMessageType0",
    "RuleBodySchedule",
    "RuleFollowUpJson",
    "RuleFollowUpJsonMessage",
    "RuleJson",
    "RuleJsonAudience",
    "RuleJsonMessage",
    "RuleJsonSchedule",
    "RuleList",
    "SegmentJson",
    "SegmentList",
    "SendJson",
    "SendList",
    "Stats",
    "StatsTimers",
    "Status",
    "StepJson",
    "StepOnName",
    "SubjectBody",
    "SubjectBodyDataType0",
    "SubjectBodyTemplatesType0",
    "SubjectDetailJson",
    "SubjectJson",
    "SubjectJsonDataType0",
    "SubjectJsonTemplatesType0",
    "SubjectList",
    "SubjectSummaryJson",
    "SubscriberAddresses",
    "SubscriberAddressesWebhookType0",
    "SubscriberAddressesWechat",
    "SubscriberAddressesWechatMini",
    "SubscriberBody",
    "SubscriberJson",
    "SubscriberLine",
    "SubscriberList",
    "SubscriberPatch",
    "SubscriberPatchAddressesType0",
    "SubscriberPatchPreferencesType0",
    "SubscriberPreferences",
    "SubscriberPreferencesChannelTypes",
    "SubscriberPreferencesTopics",
    "SubscriberQuietHours",
    "SubscriberServiceToken",
    "TaskJobJson",
    "TaskJson",
    "TaskList",
    "TemplateBody",
    "TemplateBodyLocales",
    "TemplateJson",
    "TemplateJsonLocales",
    "TemplateList",
    "TemplatePreview",
    "TemplatePreviewDataType0",
    "TemplatePreviewJson",
    "TemplatePreviewJsonErrors",
    "TemplatePreviewJsonParts",
    "TemplateRef",
    "TemplateUse",
    "TemplateUseDataType0",
    "TimerDigest",
    "TimerJson",
    "TimerJsonMessageType0",
    "TimerList",
    "TimerPatch",
    "TimerPatchMessageType0",
    "TimerTo",
    "ToJson",
    "ToTypeJson",
    "TotalsJson",
    "UserReminder",
    "UserReminders",
    "UserSendJson",
    "UserSubject",
    "UserView",
    "VersionJson",
    "VersionJsonAudience",
    "VersionJsonMessage",
    "VersionJsonSchedule",
    "VersionList",
    "YearSpec",
)
