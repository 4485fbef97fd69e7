export {
  health,
  type LeaseReport,
  type LockReport,
  leaseReport,
  lockReport,
  type PrefixReport,
} from "./admin.js";
export { ResourceApi, subscriptionLockName } from "./api.js";
export { type AppContext, appContext, createAppContext, openAppContext } from "./context.js";
export * from "./model.js";
export { endOf, type OperationEnd, outputFor, type ProvisioningOutput } from "./outcome.js";
export {
  deprovisionStep,
  failStep,
  finalizeStep,
  orchestrationInstanceId,
  PROVISIONING,
  type ProvisioningInput,
  parseProvisioningInput,
  provisioningRequestFor,
  provisionStep,
  SIMULATE_TAG,
  type Sighting,
  setStep,
  type ValidateResult,
  validateStep,
} from "./provisioning.js";
export {
  type OrchestrationStarter,
  RESOURCE_TRIGGERS,
  type StartOutcome,
  startOrchestrations,
} from "./reactions.js";
export { type ReconcileOutcome, reconcileOperations } from "./reconcile.js";
export { type ApiRequest, type ApiResponse, answer, type RequestLog } from "./request.js";
export { decodeSkipToken, encodeSkipToken, MAX_SKIP_TOKEN_CHARS } from "./skipToken.js";
export {
  countByState,
  readSummary,
  refreshSummary,
  type SummaryDocument,
  SummaryVersions,
  updateSummaries,
} from "./summaries.js";
export {
  type PageOutcome,
  type RecountWindow,
  summarizePage,
  systemClock,
  type WindowClock,
} from "./summary-window.js";
