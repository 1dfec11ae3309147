//! What the fake does with every params field of the methods it implements by rule, decided
//! field by field. A test holds this table to every supported version's schema bundle: a field
//! a new codex release adds to one of these methods fails it (`undecided`) until the fake
//! decides what it does with it — reads it (`Read`: a rule acts on it) or, knowingly, answers as
//! if it were absent (`Unmodeled`, with the reason).

use serde_json::Value;

/// The fake's decision on one params field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A rule of the fake acts on it.
    Read,
    /// Answered as if absent; why.
    Unmodeled(&'static str),
}

use Field::{Read, Unmodeled};

const NO_MODEL_EFFECT: &str = "shapes the model's prompt or request only: nothing the scripted \
                               model or the client sees";
const MULTI_AGENT: &str = "sub-agents are not modeled: threads show `explicitRequestOnly`";
const NOT_MODELED_LIST: &str = "a list filter the fake does not apply (its threads are listed \
                                unfiltered by it)";

const CHATGPT_LOGIN: &str = "a ChatGPT or cloud login needs the network: only API keys log in";
const GATED: &str = "refused before it is read: no ChatGPT login is ever modeled";

const REFUSED: &str = "refused before it is read: what it names is never started here";
const NOT_CONNECTED: &str =
    "used when codex connects to the environment, which the fake never does";
const FIXED: &str = "the answer depends on nothing the fake models";
const UNSUPPORTED: &str = "codex does not support the method yet";
const NOT_RUN: &str = "checked as codex checks it; a command that passes is not run here";
const NOT_SPAWNED: &str = "checked as codex checks a spawn; a process that would start is not run";
const SAVED: &str = "goes into the bundle's contents, which the fake does not write";
const UPLOADED: &str = "sent with the upload, which never leaves the fake (as the real server \
                        without network, it fails)";
const SEARCHED: &str = "shapes a search the fake does not run (its result is the recorded one)";
/// `thread/search` and `thread/search/stream` take the same params.
const SEARCH_FIELDS: &[(&str, Field)] = &[
    ("searchTerm", Read),
    ("cursor", Read),
    ("limit", Unmodeled(SEARCHED)),
    ("archived", Unmodeled(SEARCHED)),
    ("currentAccountOnly", Unmodeled(SEARCHED)),
    ("includeAttachedThreads", Unmodeled(SEARCHED)),
    ("sortDirection", Unmodeled(SEARCHED)),
    ("sortKey", Unmodeled(SEARCHED)),
    ("sourceKinds", Unmodeled(SEARCHED)),
];
const NOT_KEPT: &str = "the thread is checked; what it would do there is not modeled";

/// Per method the fake implements by rule (`handlers::dispatch`), each params field of any
/// supported version.
pub const PARAMS: &[(&str, &[(&str, Field)])] = &[
    (
        "initialize",
        &[("capabilities", Read), ("clientInfo", Read)],
    ),
    (
        "thread/start",
        &[
            (
                "allowProviderModelFallback",
                Unmodeled("the scripted provider has no static catalog"),
            ),
            ("approvalPolicy", Read),
            ("approvalsReviewer", Read),
            ("baseInstructions", Unmodeled(NO_MODEL_EFFECT)),
            ("config", Read),
            ("cwd", Read),
            ("daybreakEnabled", Read),
            ("developerInstructions", Read),
            ("dynamicTools", Read),
            ("environments", Read),
            ("ephemeral", Read),
            (
                "experimentalRawEvents",
                Unmodeled("streams codex's own prompt: internal to Codex Cloud"),
            ),
            ("historyMode", Read),
            (
                "mockExperimentalField",
                Unmodeled("a test field of codex's: no effect"),
            ),
            ("model", Read),
            ("modelProvider", Read),
            ("multiAgentMode", Unmodeled(MULTI_AGENT)),
            ("permissions", Read),
            ("personality", Read),
            ("projectId", Read),
            ("runtimeWorkspaceRoots", Read),
            ("sandbox", Read),
            (
                "selectedCapabilityRoots",
                Unmodeled("plugin and skill roots: none in the fake"),
            ),
            ("serviceName", Unmodeled(NO_MODEL_EFFECT)),
            ("serviceTier", Read),
            ("sessionStartSource", Unmodeled("analytics only")),
            ("threadSource", Read),
        ],
    ),
    (
        "thread/resume",
        &[
            ("approvalPolicy", Read),
            ("approvalsReviewer", Read),
            ("baseInstructions", Unmodeled(NO_MODEL_EFFECT)),
            ("config", Read),
            ("cwd", Read),
            (
                "developerInstructions",
                Unmodeled("a resumed thread keeps its own"),
            ),
            ("excludeTurns", Read),
            ("history", Read),
            ("initialTurnsPage", Read),
            ("model", Read),
            ("modelProvider", Read),
            ("path", Read),
            ("permissions", Read),
            ("personality", Unmodeled("a resumed thread keeps its own")),
            ("runtimeWorkspaceRoots", Read),
            ("sandbox", Read),
            ("serviceTier", Read),
            ("threadId", Read),
        ],
    ),
    (
        "thread/fork",
        &[
            ("approvalPolicy", Read),
            ("approvalsReviewer", Read),
            ("attachToSource", Read),
            ("baseInstructions", Unmodeled(NO_MODEL_EFFECT)),
            (
                "beforeTurnId",
                Unmodeled("forks keep every turn of their source"),
            ),
            ("config", Read),
            ("cwd", Read),
            ("deferGoalContinuation", Unmodeled("forks keep no goal")),
            ("developerInstructions", Read),
            ("ephemeral", Read),
            ("excludeTurns", Read),
            (
                "experimentalDisablePredictionMcp",
                Unmodeled("prediction is not modeled"),
            ),
            (
                "experimentalPredictionMode",
                Unmodeled("prediction is not modeled"),
            ),
            (
                "lastTurnId",
                Unmodeled("forks keep every turn of their source"),
            ),
            ("model", Read),
            ("modelProvider", Read),
            ("path", Unmodeled("a fork is found by its threadId")),
            ("permissions", Read),
            ("runtimeWorkspaceRoots", Read),
            ("sandbox", Read),
            ("serviceTier", Read),
            ("threadId", Read),
            ("threadSource", Read),
        ],
    ),
    ("thread/read", &[("includeTurns", Read), ("threadId", Read)]),
    (
        "thread/turns/list",
        &[
            ("cursor", Read),
            ("itemsView", Read),
            ("limit", Read),
            ("sortDirection", Read),
            ("threadId", Read),
        ],
    ),
    (
        "thread/readState/update",
        &[
            ("expectedRevision", Read),
            ("operation", Read),
            ("threadId", Read),
        ],
    ),
    ("thread/loaded/list", &[("cursor", Read), ("limit", Read)]),
    ("thread/unsubscribe", &[("threadId", Read)]),
    ("thread/delete", &[("threadId", Read)]),
    (
        "thread/items/list",
        &[
            ("cursor", Read),
            ("deferOutput", Unmodeled("items carry their output")),
            ("limit", Read),
            ("sortDirection", Read),
            ("threadId", Read),
            ("turnId", Read),
        ],
    ),
    (
        "thread/list",
        &[
            ("ancestorThreadId", Unmodeled(NOT_MODELED_LIST)),
            ("archived", Read),
            ("attachedToThreadId", Read),
            ("currentAccountOnly", Unmodeled(NOT_MODELED_LIST)),
            (
                "cursor",
                Unmodeled("one page: the cursors are given, not followed"),
            ),
            ("cwd", Read),
            ("excludedThreadIds", Read),
            ("includeAttachedThreads", Unmodeled(NOT_MODELED_LIST)),
            ("includedThreadIds", Read),
            ("limit", Read),
            ("modelProviders", Read),
            ("originators", Unmodeled(NOT_MODELED_LIST)),
            ("parentThreadId", Read),
            ("projectId", Unmodeled(NOT_MODELED_LIST)),
            ("searchTerm", Unmodeled(NOT_MODELED_LIST)),
            ("sectionId", Unmodeled(NOT_MODELED_LIST)),
            ("sortDirection", Unmodeled("newest first only")),
            ("sortKey", Unmodeled("by update time only")),
            ("sourceKinds", Read),
            ("useStateDbOnly", Unmodeled("one store")),
        ],
    ),
    ("thread/archive", &[("threadId", Read)]),
    ("thread/unarchive", &[("threadId", Read)]),
    ("thread/name/set", &[("name", Read), ("threadId", Read)]),
    (
        "thread/goal/set",
        &[
            ("objective", Read),
            ("origin", Unmodeled("analytics only")),
            ("status", Read),
            ("threadId", Read),
            ("tokenBudget", Read),
        ],
    ),
    ("thread/goal/get", &[("threadId", Read)]),
    (
        "thread/goal/clear",
        &[("origin", Unmodeled("analytics only")), ("threadId", Read)],
    ),
    (
        "turn/start",
        &[
            ("additionalContext", Unmodeled(NO_MODEL_EFFECT)),
            ("approvalPolicy", Read),
            ("approvalsReviewer", Read),
            ("clientUserMessageId", Read),
            ("collaborationMode", Read),
            ("cwd", Read),
            ("cyberAccessProgram", Unmodeled(NO_MODEL_EFFECT)),
            ("disabledPluginIds", Read),
            ("effort", Read),
            ("environments", Read),
            ("input", Read),
            ("model", Read),
            ("multiAgentMode", Unmodeled(MULTI_AGENT)),
            ("outputSchema", Unmodeled(NO_MODEL_EFFECT)),
            ("parentTurnId", Unmodeled("sub-agent turns are not modeled")),
            ("permissions", Read),
            ("personality", Read),
            ("responsesapiClientMetadata", Unmodeled(NO_MODEL_EFFECT)),
            (
                "responsesapiClientMetadataPatch",
                Unmodeled(NO_MODEL_EFFECT),
            ),
            ("rootTurnId", Read),
            ("runtimeWorkspaceRoots", Read),
            ("sandboxPolicy", Read),
            ("serviceTier", Read),
            ("serviceTierForTurn", Unmodeled(NO_MODEL_EFFECT)),
            ("summary", Read),
            ("threadId", Read),
            ("toolOutput", Read),
            ("turnTrigger", Unmodeled("analytics only")),
        ],
    ),
    ("turn/interrupt", &[("threadId", Read), ("turnId", Read)]),
    (
        "turn/steer",
        &[
            ("additionalContext", Unmodeled(NO_MODEL_EFFECT)),
            ("clientUserMessageId", Read),
            ("expectedTurnId", Read),
            ("input", Read),
            ("responsesapiClientMetadata", Unmodeled(NO_MODEL_EFFECT)),
            (
                "responsesapiClientMetadataPatch",
                Unmodeled(NO_MODEL_EFFECT),
            ),
            ("threadId", Read),
        ],
    ),
    ("thread/compact/start", &[("threadId", Read)]),
    ("fs/readFile", &[("path", Read)]),
    ("fs/writeFile", &[("dataBase64", Read), ("path", Read)]),
    ("fs/createDirectory", &[("path", Read), ("recursive", Read)]),
    ("fs/getMetadata", &[("path", Read)]),
    ("fs/readDirectory", &[("path", Read)]),
    (
        "fs/remove",
        &[("force", Read), ("path", Read), ("recursive", Read)],
    ),
    (
        "fs/copy",
        &[
            ("destinationPath", Read),
            ("recursive", Read),
            ("sourcePath", Read),
        ],
    ),
    (
        "fs/watch",
        &[
            ("path", Read),
            (
                "watchId",
                Unmodeled("no change notifications are modeled: the id names nothing"),
            ),
        ],
    ),
    ("config/read", &[("cwd", Read), ("includeLayers", Read)]),
    (
        "experimentalFeature/enablement/set",
        &[("enablement", Read)],
    ),
    (
        "thread/backgroundTerminals/list",
        &[
            ("cursor", Read),
            (
                "limit",
                Unmodeled("a thread here has no background terminal to page"),
            ),
            ("threadId", Read),
        ],
    ),
    ("thread/backgroundTerminals/clean", &[("threadId", Read)]),
    (
        "thread/queue/list",
        &[
            ("cursor", Read),
            (
                "limit",
                Unmodeled("a thread here has no queued submission to page"),
            ),
            ("threadId", Read),
        ],
    ),
    (
        "thread/memoryMode/set",
        &[
            (
                "mode",
                Unmodeled("no memory is written here: the mode changes nothing shown"),
            ),
            ("threadId", Read),
        ],
    ),
    ("thread/memory/read", &[("threadId", Read)]),
    (
        "thread/shellCommand",
        &[
            ("command", Read),
            ("threadId", Read),
            (
                "timeoutMs",
                Unmodeled("a command is not cut off here: it runs to its end"),
            ),
        ],
    ),
    (
        "config/value/write",
        &[
            ("expectedVersion", Read),
            ("filePath", Read),
            ("keyPath", Read),
            ("mergeStrategy", Read),
            ("value", Read),
        ],
    ),
    (
        "config/batchWrite",
        &[
            ("edits", Read),
            ("expectedVersion", Read),
            ("filePath", Read),
            (
                "reloadUserConfig",
                Unmodeled("a running thread's settings are not changed by a later write here"),
            ),
        ],
    ),
    (
        "account/read",
        &[(
            "refreshToken",
            Unmodeled("an API key login has no token to refresh"),
        )],
    ),
    (
        "account/login/start",
        &[
            ("apiKey", Read),
            ("type", Read),
            ("accessKeyId", Unmodeled(CHATGPT_LOGIN)),
            ("accessToken", Unmodeled(CHATGPT_LOGIN)),
            ("appBrand", Unmodeled(CHATGPT_LOGIN)),
            ("chatgptAccountId", Unmodeled(CHATGPT_LOGIN)),
            ("chatgptPlanType", Unmodeled(CHATGPT_LOGIN)),
            ("codexStreamlinedLogin", Unmodeled(CHATGPT_LOGIN)),
            ("region", Unmodeled(CHATGPT_LOGIN)),
            ("secretAccessKey", Unmodeled(CHATGPT_LOGIN)),
            ("sessionToken", Unmodeled(CHATGPT_LOGIN)),
            ("useHostedLoginSuccessPage", Unmodeled(CHATGPT_LOGIN)),
        ],
    ),
    ("account/login/cancel", &[("loginId", Read)]),
    ("account/logout", &[]),
    (
        "account/bedrock/setup",
        &[("type", Read), ("profile", Read), ("region", Read)],
    ),
    (
        "account/gcp/setup",
        &[
            ("projectId", Read),
            ("location", Read),
            ("credentialFile", Read),
        ],
    ),
    (
        "process/spawn",
        &[
            ("command", Read),
            ("cwd", Read),
            ("env", Read),
            ("processHandle", Read),
            ("tty", Read),
            ("outputBytesCap", Unmodeled(NOT_SPAWNED)),
            ("size", Unmodeled(NOT_SPAWNED)),
            ("streamStdin", Unmodeled(NOT_SPAWNED)),
            ("streamStdoutStderr", Unmodeled(NOT_SPAWNED)),
            ("timeoutMs", Unmodeled(NOT_SPAWNED)),
        ],
    ),
    (
        "feedback/save",
        &[
            ("threadId", Read),
            ("savePath", Read),
            ("classification", Unmodeled(SAVED)),
            ("reason", Unmodeled(SAVED)),
            ("tags", Unmodeled(SAVED)),
            ("includeLogs", Unmodeled(SAVED)),
            ("extraLogFiles", Unmodeled(SAVED)),
        ],
    ),
    (
        "feedback/upload",
        &[
            ("threadId", Read),
            ("classification", Unmodeled(UPLOADED)),
            ("reason", Unmodeled(UPLOADED)),
            ("tags", Unmodeled(UPLOADED)),
            ("includeLogs", Unmodeled(UPLOADED)),
            ("extraLogFiles", Unmodeled(UPLOADED)),
        ],
    ),
    (
        "account/rateLimits/read",
        &[
            ("excludeResetCreditDetails", Unmodeled(GATED)),
            ("supportsLunaReserve", Unmodeled(GATED)),
        ],
    ),
    (
        "account/rateLimitResetCredit/consume",
        &[
            ("creditId", Unmodeled(GATED)),
            ("idempotencyKey", Unmodeled(GATED)),
        ],
    ),
    ("account/usage/read", &[("threadId", Unmodeled(GATED))]),
    ("account/workspaceMessages/read", &[]),
    (
        "account/sendAddCreditsNudgeEmail",
        &[("creditType", Unmodeled(GATED))],
    ),
    (
        "accountSession/switch",
        &[
            ("accountId", Read),
            ("allowBrowserLogin", Unmodeled(GATED)),
            ("sessionId", Read),
        ],
    ),
    ("accountSession/list", &[("refreshWorkspaceMetadata", Read)]),
    ("config/mcpServer/reload", &[]),
    ("remoteControl/enable", &[("ephemeral", Unmodeled(GATED))]),
    ("remoteControl/disable", &[("ephemeral", Unmodeled(GATED))]),
    (
        "remoteControl/client/list",
        &[
            ("cursor", Unmodeled(GATED)),
            ("environmentId", Unmodeled(GATED)),
            ("limit", Unmodeled(GATED)),
            ("order", Unmodeled(GATED)),
        ],
    ),
    (
        "remoteControl/client/revoke",
        &[
            ("clientId", Unmodeled(GATED)),
            ("environmentId", Unmodeled(GATED)),
        ],
    ),
    ("remoteControl/status/read", &[]),
    (
        "command/exec/write",
        &[
            ("closeStdin", Read),
            ("deltaBase64", Read),
            ("processId", Read),
        ],
    ),
    (
        "command/exec/resize",
        &[("processId", Read), ("size", Read)],
    ),
    ("command/exec/terminate", &[("processId", Read)]),
    (
        "process/writeStdin",
        &[
            ("closeStdin", Read),
            ("deltaBase64", Read),
            ("processHandle", Read),
        ],
    ),
    (
        "process/resizePty",
        &[("processHandle", Read), ("size", Read)],
    ),
    ("process/kill", &[("processHandle", Read)]),
    ("thread/increment_elicitation", &[("threadId", Read)]),
    ("thread/decrement_elicitation", &[("threadId", Read)]),
    (
        "thread/items/read",
        &[
            ("itemIds", Read),
            ("threadId", Read),
            ("turnId", Unmodeled(REFUSED)),
        ],
    ),
    (
        "thread/inject_items",
        &[("items", Read), ("threadId", Unmodeled(REFUSED))],
    ),
    (
        "thread/metadata/update",
        &[
            ("daybreakEnabled", Read),
            ("gitInfo", Read),
            ("projectId", Read),
            ("threadId", Unmodeled(REFUSED)),
        ],
    ),
    (
        "thread/queue/start",
        &[("queuedSubmissionId", Read), ("threadId", Read)],
    ),
    ("project/read", &[("projectId", Read)]),
    (
        "project/update",
        &[
            ("metadata", Read),
            ("name", Read),
            ("projectId", Read),
            ("roots", Read),
        ],
    ),
    (
        "project/move",
        &[("beforeProjectId", Read), ("projectId", Read)],
    ),
    (
        "project/create",
        &[
            ("idempotencyKey", Read),
            ("metadata", Read),
            ("name", Read),
            ("roots", Read),
        ],
    ),
    (
        "project/import",
        &[
            ("idempotencyKey", Read),
            ("metadata", Read),
            ("name", Read),
            ("roots", Read),
            ("threads", Read),
        ],
    ),
    (
        "project/list",
        &[
            ("cursor", Read),
            ("limit", Read),
            ("sortDirection", Read),
            ("sortKey", Read),
        ],
    ),
    ("project/delete", &[("projectId", Read)]),
    (
        "mcpServer/oauth/login",
        &[
            ("clientRegistration", Unmodeled(REFUSED)),
            ("environmentId", Read),
            ("name", Read),
            ("scopes", Unmodeled(REFUSED)),
            ("threadId", Read),
            ("timeoutSecs", Unmodeled(REFUSED)),
        ],
    ),
    (
        "mcpServer/resource/read",
        &[
            ("_meta", Unmodeled(REFUSED)),
            ("connectorId", Unmodeled(REFUSED)),
            ("environmentId", Unmodeled(REFUSED)),
            ("originCallId", Unmodeled(REFUSED)),
            ("server", Read),
            ("target", Unmodeled(REFUSED)),
            ("threadId", Unmodeled(REFUSED)),
            ("uri", Unmodeled(REFUSED)),
        ],
    ),
    (
        "mcpServer/tool/call",
        &[
            ("_meta", Unmodeled(REFUSED)),
            ("arguments", Unmodeled(REFUSED)),
            ("environmentId", Unmodeled(REFUSED)),
            ("server", Read),
            ("threadId", Unmodeled(REFUSED)),
            ("tool", Unmodeled(REFUSED)),
        ],
    ),
    (
        "fuzzyFileSearch",
        &[
            (
                "cancellationToken",
                Unmodeled(
                    "a search answers before the next request is read here: none is still \
                     running for a later one with its token to cancel",
                ),
            ),
            ("query", Read),
            ("roots", Read),
        ],
    ),
    (
        "review/start",
        &[("delivery", Read), ("target", Read), ("threadId", Read)],
    ),
    (
        "app/read",
        &[
            ("appIds", Read),
            (
                "includeTools",
                Unmodeled("shapes known apps' metadata: none is known without a ChatGPT login"),
            ),
            ("threadId", Read),
        ],
    ),
    (
        "fuzzyFileSearch/sessionStart",
        &[("roots", Read), ("sessionId", Read)],
    ),
    (
        "fuzzyFileSearch/sessionUpdate",
        &[("query", Read), ("sessionId", Read)],
    ),
    ("fuzzyFileSearch/sessionStop", &[("sessionId", Read)]),
    (
        "app/list",
        &[
            ("cursor", Unmodeled(GATED)),
            ("forceRefetch", Unmodeled(GATED)),
            ("limit", Unmodeled(GATED)),
            ("threadId", Read),
        ],
    ),
    (
        "app/installed",
        &[("forceRefresh", Unmodeled(GATED)), ("threadId", Read)],
    ),
    (
        "environment/add",
        &[
            ("authBearerToken", Unmodeled(NOT_CONNECTED)),
            ("connectTimeoutMs", Unmodeled(NOT_CONNECTED)),
            ("environmentId", Read),
            ("execServerUrl", Read),
            ("skills", Unmodeled(NOT_CONNECTED)),
            ("websocketRequestId", Unmodeled(NOT_CONNECTED)),
        ],
    ),
    ("environment/info", &[("environmentId", Read)]),
    ("environment/status", &[("environmentId", Read)]),
    ("userVerification/status", &[]),
    ("memory/status", &[("minConsolidatedThreads", Read)]),
    ("memory/reset", &[]),
    ("account/bedrock/discover", &[]),
    ("windowsSandbox/readiness", &[]),
    ("server/diagnostics", &[]),
    (
        "windowsSandbox/setupStart",
        &[
            (
                "cwd",
                Unmodeled("off Windows the setup fails before it reads the cwd"),
            ),
            ("mode", Read),
        ],
    ),
    (
        "thread/prepareApprovedPlan",
        &[
            ("attachmentPath", Unmodeled(FIXED)),
            ("markdown", Unmodeled(FIXED)),
            ("threadId", Unmodeled(FIXED)),
        ],
    ),
    ("mock/experimentalMethod", &[("value", Read)]),
    ("modelProvider/capabilities/read", &[]),
    (
        "permissionProfile/list",
        &[
            ("cursor", Unmodeled(FIXED)),
            ("cwd", Unmodeled(FIXED)),
            ("limit", Unmodeled(FIXED)),
        ],
    ),
    ("hooks/list", &[("cwds", Read), ("threadId", Read)]),
    (
        "command/exec",
        &[
            ("command", Read),
            ("cwd", Unmodeled(NOT_RUN)),
            ("disableOutputCap", Read),
            ("disableTimeout", Read),
            ("env", Unmodeled(NOT_RUN)),
            ("outputBytesCap", Read),
            ("permissionProfile", Read),
            ("processId", Read),
            ("sandboxPolicy", Read),
            ("size", Read),
            ("streamStdin", Read),
            ("streamStdoutStderr", Read),
            ("timeoutMs", Read),
            ("tty", Read),
        ],
    ),
    (
        "thread/backgroundTerminals/terminate",
        &[("processId", Read), ("threadId", Read)],
    ),
    (
        "mcpServerStatus/list",
        &[
            ("cursor", Read),
            ("detail", Read),
            ("environmentId", Read),
            ("limit", Read),
            ("serverName", Read),
            ("threadId", Read),
        ],
    ),
    (
        "thread/attachmentOwner/list",
        &[
            ("archived", Unmodeled(FIXED)),
            ("attachmentType", Read),
            ("cursor", Read),
            ("identityKey", Read),
            ("limit", Unmodeled(FIXED)),
        ],
    ),
    (
        "thread/realtime/appendText",
        &[
            ("role", Unmodeled(NOT_KEPT)),
            ("text", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
        ],
    ),
    (
        "thread/realtime/appendSpeech",
        &[("text", Unmodeled(NOT_KEPT)), ("threadId", Read)],
    ),
    (
        "thread/realtime/start",
        &[
            ("backendReasoningStatus", Unmodeled(NOT_KEPT)),
            ("clientManagedHandoffs", Unmodeled(NOT_KEPT)),
            ("codexResponseHandoffChannelPrefixes", Unmodeled(NOT_KEPT)),
            ("codexResponseHandoffMode", Unmodeled(NOT_KEPT)),
            ("codexResponseItemPrefix", Unmodeled(NOT_KEPT)),
            ("codexResponsesAsItems", Unmodeled(NOT_KEPT)),
            ("delegationAckFiller", Unmodeled(NOT_KEPT)),
            ("flushTranscriptTailOnSessionEnd", Unmodeled(NOT_KEPT)),
            ("includeStartupContext", Unmodeled(NOT_KEPT)),
            ("initialItems", Unmodeled(NOT_KEPT)),
            ("model", Unmodeled(NOT_KEPT)),
            ("outputModality", Read),
            ("prompt", Read),
            ("realtimeEndInstructions", Unmodeled(NOT_KEPT)),
            ("realtimeSessionId", Unmodeled(NOT_KEPT)),
            ("realtimeStartInstructions", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
            ("transport", Read),
            ("version", Read),
            ("voice", Read),
            ("voiceSessionId", Unmodeled(NOT_KEPT)),
        ],
    ),
    ("thread/realtime/stop", &[("threadId", Read)]),
    (
        "thread/realtime/appendAudio",
        &[("audio", Unmodeled(NOT_KEPT)), ("threadId", Read)],
    ),
    (
        "thread/queue/update",
        &[
            ("input", Read),
            ("queuedSubmissionId", Read),
            ("responsesapiClientMetadata", Unmodeled(REFUSED)),
            ("threadId", Read),
        ],
    ),
    (
        "thread/settings/update",
        &[
            ("approvalPolicy", Read),
            ("approvalsReviewer", Read),
            ("collaborationMode", Read),
            ("cwd", Read),
            ("disabledPluginIds", Read),
            ("effort", Read),
            ("environments", Read),
            ("model", Read),
            ("multiAgentMode", Unmodeled(MULTI_AGENT)),
            ("permissions", Read),
            ("personality", Read),
            ("sandboxPolicy", Read),
            ("serviceTier", Read),
            ("summary", Read),
            ("threadId", Read),
        ],
    ),
    ("plugin/share/checkout", &[("remotePluginId", Read)]),
    (
        "plugin/share/save",
        &[
            ("discoverability", Unmodeled(GATED)),
            ("pluginPath", Unmodeled(GATED)),
            ("remotePluginId", Read),
            ("shareTargets", Unmodeled(GATED)),
        ],
    ),
    (
        "remoteControl/pairing/start",
        &[("manualCode", Unmodeled(GATED))],
    ),
    (
        "remoteControl/pairing/status",
        &[("manualPairingCode", Read), ("pairingCode", Read)],
    ),
    (
        "experimentalFeature/list",
        &[("cursor", Read), ("limit", Read), ("threadId", Read)],
    ),
    ("modelProvider/default/set", &[("providerId", Read)]),
    (
        "thread/attachment/add",
        &[
            ("attachmentType", Unmodeled(NOT_KEPT)),
            ("identityKey", Unmodeled(NOT_KEPT)),
            ("payload", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
        ],
    ),
    (
        "model/list",
        &[
            ("cursor", Read),
            ("includeHidden", Read),
            ("limit", Read),
            ("modelProvider", Read),
        ],
    ),
    ("configRequirements/read", &[]),
    ("skills/extraRoots/set", &[("extraRoots", Read)]),
    (
        "skills/config/write",
        &[("enabled", Read), ("name", Read), ("path", Read)],
    ),
    (
        "thread/attachment/list",
        &[
            ("cursor", Unmodeled(NOT_KEPT)),
            ("limit", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
        ],
    ),
    (
        "thread/attachment/remove",
        &[
            ("attachmentType", Unmodeled(NOT_KEPT)),
            ("identityKey", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
        ],
    ),
    (
        "thread/approveGuardianDeniedAction",
        &[("event", Read), ("threadId", Unmodeled(NOT_KEPT))],
    ),
    ("thread/guardianReview", &[("threadId", Read)]),
    ("marketplace/remove", &[("marketplaceName", Read)]),
    ("marketplace/upgrade", &[("marketplaceName", Read)]),
    (
        "plugin/skill/read",
        &[
            ("remoteMarketplaceName", Unmodeled(GATED)),
            ("remotePluginId", Read),
            ("skillName", Unmodeled(GATED)),
        ],
    ),
    (
        "thread/queue/add",
        &[
            ("clientUserMessageId", Read),
            ("input", Read),
            ("responsesapiClientMetadata", Read),
            ("threadId", Read),
        ],
    ),
    (
        "thread/section/move",
        &[
            ("beforeThreadId", Read),
            ("sectionId", Read),
            ("threadId", Read),
        ],
    ),
    (
        "mcpServer/event/stream/start",
        &[
            ("_meta", Unmodeled(REFUSED)),
            ("arguments", Unmodeled(REFUSED)),
            ("name", Unmodeled(REFUSED)),
            ("server", Unmodeled(REFUSED)),
            ("subscriptionId", Unmodeled(REFUSED)),
            ("threadId", Unmodeled(REFUSED)),
        ],
    ),
    (
        "thread/realtime/list",
        &[
            ("afterPosition", Unmodeled(NOT_KEPT)),
            ("cursor", Read),
            ("eventId", Unmodeled(NOT_KEPT)),
            ("fromObservedAtMs", Unmodeled(NOT_KEPT)),
            ("limit", Unmodeled(NOT_KEPT)),
            ("order", Unmodeled(NOT_KEPT)),
            ("requiredThroughPosition", Unmodeled(NOT_KEPT)),
            ("sessionId", Unmodeled(NOT_KEPT)),
            ("snapshotEnd", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
            ("toObservedAtMs", Unmodeled(NOT_KEPT)),
        ],
    ),
    (
        "thread/revert",
        &[("beforeTurnId", Unmodeled(NOT_KEPT)), ("threadId", Read)],
    ),
    (
        "thread/sample",
        &[
            ("allowInProgressTurn", Read),
            ("disableMcp", Unmodeled(NOT_KEPT)),
            ("effort", Unmodeled(NOT_KEPT)),
            ("expectedTurnId", Read),
            ("interruptOnCancel", Unmodeled(NOT_KEPT)),
            ("prompt", Read),
            ("responsesapiClientMetadata", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
            ("threadSource", Unmodeled(NOT_KEPT)),
            ("turnTrigger", Unmodeled(NOT_KEPT)),
        ],
    ),
    (
        "turn/settings/update",
        &[
            ("approvalsReviewer", Unmodeled(NOT_KEPT)),
            ("effort", Unmodeled(NOT_KEPT)),
            ("environments", Unmodeled(NOT_KEPT)),
            ("model", Unmodeled(NOT_KEPT)),
            ("serviceTier", Unmodeled(NOT_KEPT)),
            ("summary", Unmodeled(NOT_KEPT)),
            ("threadId", Read),
            ("turnId", Unmodeled(NOT_KEPT)),
        ],
    ),
    ("userVerification/enroll", &[]),
    ("userVerification/delete", &[]),
    (
        "userVerification/verify",
        &[
            ("challenge", Unmodeled(REFUSED)),
            ("description", Unmodeled(REFUSED)),
            ("title", Unmodeled(REFUSED)),
        ],
    ),
    (
        "skills/list",
        &[
            ("cwds", Read),
            (
                "forceReload",
                Unmodeled(
                    "nothing is cached here: every list is read from disk (codex's watcher \
                     drops its cache when a skill changes)",
                ),
            ),
        ],
    ),
    (
        "plugin/install",
        &[
            (
                "installAttemptId",
                Unmodeled("tags the install for codex's analytics: nothing a client sees"),
            ),
            ("marketplacePath", Read),
            ("pluginName", Read),
            ("remoteMarketplaceName", Read),
        ],
    ),
    ("plugin/uninstall", &[("pluginId", Read)]),
    (
        "plugin/list",
        &[
            ("cwds", Read),
            (
                "forceRefetch",
                Unmodeled("refetches the remote catalog only: no effect on local marketplaces"),
            ),
            ("marketplaceKinds", Read),
        ],
    ),
    (
        "plugin/installed",
        &[("cwds", Read), ("installSuggestionPluginNames", Read)],
    ),
    (
        "plugin/read",
        &[
            ("marketplacePath", Read),
            ("pluginName", Read),
            ("remoteMarketplaceName", Read),
        ],
    ),
    (
        "plugin/search",
        &[
            ("cursor", Read),
            ("cwds", Read),
            (
                "limit",
                Unmodeled("codex ignores it for local marketplaces' plugins"),
            ),
            ("scope", Read),
            ("searchTerm", Read),
        ],
    ),
    ("threadSection/list", &[("cursor", Read), ("limit", Read)]),
    (
        "threadSection/update",
        &[("appearance", Read), ("name", Read), ("sectionId", Read)],
    ),
    (
        "threadSection/create",
        &[("appearance", Read), ("name", Read)],
    ),
    ("threadSection/delete", &[("sectionId", Read)]),
    ("plugin/share/list", &[]),
    (
        "thread/queue/reorder",
        &[("queuedSubmissionIds", Read), ("threadId", Read)],
    ),
    (
        "thread/queue/delete",
        &[("queuedSubmissionId", Read), ("threadId", Read)],
    ),
    (
        "externalAgentConfig/import",
        &[
            ("migrationItems", Read),
            (
                "migrationSource",
                Unmodeled("only the default source is looked for: nothing of another is migrated"),
            ),
            ("providerId", Read),
            (
                "source",
                Unmodeled("analytics only: the product that started the import shows nowhere"),
            ),
        ],
    ),
    (
        "externalAgentConfig/detect",
        &[
            ("cwds", Read),
            ("includeHome", Read),
            (
                "maxSessionAgeDays",
                Unmodeled("limits recent sessions, which are not looked for"),
            ),
            (
                "maxSessions",
                Unmodeled("limits recent sessions, which are not looked for"),
            ),
            ("migrationSource", Read),
            (
                "source",
                Unmodeled("analytics only: the product that asked shows nowhere"),
            ),
        ],
    ),
    (
        "externalAgentConfig/import/recordHistory",
        &[("itemTypeResults", Read), ("providerId", Read)],
    ),
    ("externalAgentConfig/import/readHistories", &[]),
    (
        "plugin/share/updateTargets",
        &[
            ("discoverability", Unmodeled(GATED)),
            ("remotePluginId", Read),
            ("shareTargets", Read),
        ],
    ),
    (
        "marketplace/add",
        &[
            ("refName", Read),
            ("source", Read),
            (
                "sparsePaths",
                Unmodeled("a git source is cloned over the network: not modeled"),
            ),
        ],
    ),
    (
        "account/gatewayOAuth/login",
        &[
            (
                "deviceAuth",
                Unmodeled("a provider with gateway OAuth is not modeled"),
            ),
            ("modelProvider", Read),
        ],
    ),
    ("plugin/share/delete", &[("remotePluginId", Read)]),
    ("modelProvider/config/write", &[("settings", Read)]),
    ("modelProvider/list", &[]),
    ("account/gatewayOAuth/read", &[("modelProvider", Read)]),
    ("thread/search", SEARCH_FIELDS),
    ("thread/search/stream", SEARCH_FIELDS),
    (
        "thread/searchOccurrences",
        &[
            ("cursor", Unmodeled(UNSUPPORTED)),
            ("limit", Unmodeled(UNSUPPORTED)),
            ("searchTerm", Unmodeled(UNSUPPORTED)),
            ("threadId", Unmodeled(UNSUPPORTED)),
        ],
    ),
    (
        "thread/timeline/list",
        &[
            ("cursor", Unmodeled(UNSUPPORTED)),
            ("limit", Unmodeled(UNSUPPORTED)),
            ("threadId", Unmodeled(UNSUPPORTED)),
        ],
    ),
    (
        "thread/prediction/request",
        &[
            ("sourceTurnId", Unmodeled(UNSUPPORTED)),
            ("threadId", Unmodeled(UNSUPPORTED)),
        ],
    ),
];

/// The fields of `params` the fake answers as if absent (given, not null), with why: what a
/// client relies on that the fake does not model.
pub fn unmodeled(method: &str, params: &Value) -> Vec<(&'static str, &'static str)> {
    let Some((_, fields)) = PARAMS.iter().find(|(m, _)| *m == method) else {
        return Vec::new();
    };
    let Some(given) = params.as_object() else {
        return Vec::new();
    };
    fields
        .iter()
        .filter(|(name, _)| given.get(*name).is_some_and(|v| !v.is_null()))
        .filter_map(|(name, f)| match f {
            Unmodeled(why) => Some((*name, *why)),
            Read => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The params fields a schema bundle gives `method` (its params type's properties, through
    /// `$ref` and `allOf`/`anyOf`/`oneOf`), or None when the bundle has no such request.
    fn schema_fields(bundle: &Value, method: &str) -> Option<BTreeSet<String>> {
        let requests = bundle
            .pointer("/definitions/ClientRequest/oneOf")?
            .as_array()?;
        let request = requests.iter().find(|r| {
            r.pointer("/properties/method/enum/0")
                .and_then(Value::as_str)
                == Some(method)
        })?;
        let mut out = BTreeSet::new();
        if let Some(p) = request.pointer("/properties/params") {
            properties(bundle, p, &mut out, 0);
        }
        Some(out)
    }

    fn properties(bundle: &Value, node: &Value, out: &mut BTreeSet<String>, depth: usize) {
        if depth > 16 {
            return;
        }
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            if let Some(target) = bundle.pointer(r.trim_start_matches('#')) {
                properties(bundle, target, out, depth + 1);
            }
            return;
        }
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            out.extend(props.keys().cloned());
        }
        for k in ["allOf", "anyOf", "oneOf"] {
            for n in node.get(k).and_then(Value::as_array).into_iter().flatten() {
                properties(bundle, n, out, depth + 1);
            }
        }
    }

    /// The fields of the table's methods that `bundle` has and the table does not decide.
    fn undecided(bundle: &Value, table: &[(&str, &[(&str, Field)])]) -> Vec<String> {
        let mut out = Vec::new();
        for (method, fields) in table {
            for f in schema_fields(bundle, method).unwrap_or_default() {
                if !fields.iter().any(|(name, _)| *name == f) {
                    out.push(format!("{method}: params field `{f}` is not decided"));
                }
            }
        }
        out
    }

    #[test]
    fn a_field_answered_as_absent_is_named_with_why() {
        let params = serde_json::json!({"threadId": "t", "input": [], "outputSchema": {},
                                        "turnTrigger": null});
        assert_eq!(
            unmodeled("turn/start", &params),
            [("outputSchema", NO_MODEL_EFFECT)]
        );
        assert!(unmodeled("model/list", &params).is_empty());
    }

    fn bundle(p: &crate::Protocol) -> Value {
        serde_json::from_str(p.bundle).expect("bundle")
    }

    /// Every params field of every method the fake implements, in every supported version, is
    /// decided; every decided field is one of some version's.
    #[test]
    fn every_params_field_of_an_implemented_method_is_decided() {
        let mut problems = Vec::new();
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        let mut known: BTreeSet<String> = BTreeSet::new();
        for p in crate::versions() {
            let b = bundle(p);
            for u in undecided(&b, PARAMS) {
                problems.push(format!("{}: {u}", p.version));
            }
            for (m, _) in PARAMS {
                // A method a version does not have yet (`accountSession/switch` on 0.163.0).
                if let Some(fields) = schema_fields(&b, m) {
                    seen.extend(fields.into_iter().map(|f| (m.to_string(), f)));
                    known.insert(m.to_string());
                }
            }
        }
        for (m, _) in PARAMS {
            if !known.contains(*m) {
                problems.push(format!("{m}: in no version's schema"));
            }
        }
        for (m, fields) in PARAMS {
            for (f, _) in *fields {
                if !seen.contains(&(m.to_string(), f.to_string())) {
                    problems.push(format!("{m}: `{f}` is in no version's schema"));
                }
            }
        }
        // The table names exactly the methods the fake implements by rule.
        let mut methods: Vec<&str> = PARAMS.iter().map(|(m, _)| *m).collect();
        methods.sort();
        let mut handled = super::super::RULED.to_vec();
        handled.sort();
        assert_eq!(methods, handled, "PARAMS against handlers::RULED");
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// A field a new release adds (here to a copy of the newest bundle: a test fixture) is
    /// undecided until the table decides it.
    #[test]
    fn a_new_params_field_is_undecided() {
        let mut b = bundle(crate::newest());
        let props = b
            .pointer_mut("/definitions/v2/ThreadStartParams/properties")
            .and_then(Value::as_object_mut)
            .expect("ThreadStartParams' properties");
        props.insert(
            "brandNewField".into(),
            serde_json::json!({"type": "boolean"}),
        );
        assert_eq!(
            undecided(&b, PARAMS),
            ["thread/start: params field `brandNewField` is not decided"]
        );
    }
}
