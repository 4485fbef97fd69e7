export { type AppConfig, applySettings, readAppConfig, resolveSettingExpressions } from "./appConfig.js";
export { type CosmosRuntime, type CosmosRuntimeOptions, createCosmosRuntime } from "./builtinCosmos.js";
export { timerTriggerRunner } from "./builtinTimer.js";
export type { BindingInfo, FunctionMetadata, TypedData } from "./coreTypes.js";
export { DevHostError } from "./errors.js";
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
export { DEFAULT_MAX_REQUEST_BODY_BYTES } from "./http/server.js";
export { HTTP_REASON, type InvocationOutcome, type InvokeOptions, invokeFunction } from "./invocation.js";
export { type LoadedApp, type LoadedFunction, loadApp } from "./loader.js";
export { consoleSink, HostLogger, type LogRecord, type LogSink } from "./logger.js";
export { type StartCommandOptions, type StartedApp, startFromCommandLine } from "./startCommand.js";
