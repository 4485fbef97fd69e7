/**
 * The slice of the worker's `@azure/functions-core` contract the dev host implements (the module the Node worker
 * injects; its types ship with the worker, not on npm). Shapes as @azure/functions 4.16.5 uses them.
 */

/** RpcTypedData: exactly one field set. */
export interface TypedData {
  string?: string;
  json?: string;
  bytes?: Uint8Array;
  stream?: Uint8Array;
  http?: HttpData;
  int?: number;
  double?: number;
}

export interface HttpData {
  method?: string;
  url?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  params?: Record<string, string>;
  body?: TypedData;
  statusCode?: string;
  cookies?: HttpCookie[];
}

export interface HttpCookie {
  name?: string;
  value?: string;
  domain?: { value?: string } | null;
  path?: { value?: string } | null;
  expires?: { value?: { seconds?: number } } | null;
  secure?: { value?: boolean } | null;
  httpOnly?: { value?: boolean } | null;
  sameSite?: "none" | "lax" | "strict" | "explicitNone";
  maxAge?: { value?: number } | null;
}

/** One binding as the library registers it: its own options verbatim plus type and direction. */
export interface BindingInfo {
  type: string;
  direction: "in" | "out" | "inout";
  [option: string]: unknown;
}

export interface FunctionMetadata {
  name: string;
  bindings: Record<string, BindingInfo>;
  retryOptions?: Record<string, unknown>;
}

export type FunctionCallback = (...args: unknown[]) => unknown;
export type HookCallback = (context: object) => unknown;

export type LogLevel = "trace" | "debug" | "information" | "warning" | "error" | "critical" | "none";
export type LogCategory = "user" | "system" | "customMetric";

export interface ParameterBinding {
  name: string;
  data: TypedData | null | undefined;
}

export interface InvocationRequest {
  invocationId: string;
  inputData: ParameterBinding[];
  triggerMetadata?: Record<string, TypedData>;
  retryContext?: { retryCount: number; maxRetryCount: number; exception?: { message?: string } };
  /** RpcTraceContext: the host sends one with every invocation (W3C traceparent of the invocation's activity). */
  traceContext?: { traceParent?: string; traceState?: string; attributes?: Record<string, string> };
}

export interface InvocationResponse {
  invocationId: string;
  outputData?: ParameterBinding[];
  returnValue?: TypedData | null;
}

export type InvocationState = "preInvocationHooks" | "postInvocationHooks" | "invocation" | undefined;

export interface CoreInvocationContext {
  invocationId: string;
  request: InvocationRequest;
  metadata: FunctionMetadata;
  state?: InvocationState;
  log(level: LogLevel, category: LogCategory, message: string): void;
}

export interface InvocationModel {
  getArguments(): Promise<{ context: object; inputs: unknown[] }>;
  invokeFunction(context: object, inputs: unknown[], handler: FunctionCallback): Promise<unknown>;
  getResponse(context: object, result: unknown): Promise<InvocationResponse>;
}

export interface ProgrammingModel {
  name: string;
  version: string;
  getInvocationModel(coreCtx: CoreInvocationContext): InvocationModel | Promise<InvocationModel>;
  getCapabilities?(capabilities: Record<string, string>): Promise<Record<string, string>>;
}
