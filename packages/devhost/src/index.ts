export { type AppConfig, applySettings, readAppConfig, resolveSettingExpressions } from "./appConfig.js";
export { type CosmosRuntime, type CosmosRuntimeOptions, createCosmosRuntime } from "./builtinCosmos.js";
export { timerTriggerRunner } from "./builtinTimer.js";
export type {
  BindingInfo,
  FunctionMetadata,
  HttpCookie,
  HttpData,
  InvocationRequest,
  InvocationResponse,
  LogLevel,
  ParameterBinding,
  TypedData,
} from "./coreTypes.js";
export type { ContainerDefinitionLookup } from "./cosmos/provision.js";
export type { DevDashboard } from "./dashboard/index.js";
export type { EmulatorTlsChoice } from "./emulatorTls.js";
export { DevHostError } from "./errors.js";
export type { ExtensionBundle } from "./extensionBundle.js";
export type { BindingExtensions } from "./extensions.js";
export { globFiles } from "./glob.js";
export {
  type DevHostOptions,
  type RunningDevHost,
  startDevHost,
  type TriggerRunner,
  type TriggerRunnerContext,
  type TriggerRunnerFactory,
} from "./host.js";
export type { BuiltinRequest, BuiltinResponse, BuiltinRoutes } from "./http/builtin.js";
export type { CorsPolicy } from "./http/cors.js";
export { DEFAULT_MAX_REQUEST_BODY_BYTES } from "./http/server.js";
export type { HostJsonHttpThrottle } from "./http/settings.js";
export { HTTP_REASON, type InvocationOutcome, type InvokeOptions, invokeFunction } from "./invocation.js";
export type { ListenerRetryOptions } from "./listenerRetry.js";
export {
  type AppIndex,
  type LoadAppOptions,
  type LoadedApp,
  type LoadedFunction,
  type LocalApp,
  loadApp,
} from "./loader.js";
export { consoleSink, HostLogger, type LogRecord, type LogSink } from "./logger.js";
export {
  type StartCommandOptions,
  type StartedApp,
  type StopOptions,
  startFromCommandLine,
} from "./startCommand.js";
export type { AppWorker, WorkerInvocationResult } from "./worker/app-worker.js";
