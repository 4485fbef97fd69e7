/**
 * The slice of the worker's `@azure/functions-core` contract the dev host implements (the module the Node worker
 * injects; its types ship with the worker, not on npm). Shapes as @azure/functions 4.16.5 uses them.
 */

/** RpcTypedData: exactly one field set. */
export interface TypedData {
  /** Text. */
  string?: string;
  /** JSON text. */
  json?: string;
  /** Binary data. */
  bytes?: Uint8Array;
  /** A stream's bytes. */
  stream?: Uint8Array;
  /** An HTTP request or response. */
  http?: HttpData;
  /** An integer. */
  int?: number;
  /** A floating-point number. */
  double?: number;
}

/** An HTTP request or response in the worker's typed-data form (RpcHttp). */
export interface HttpData {
  /** The request's method. */
  method?: string;
  /** The request's URL. */
  url?: string;
  /** Headers, by name. */
  headers?: Record<string, string>;
  /** The request's query parameters. */
  query?: Record<string, string>;
  /** The request's route parameters. */
  params?: Record<string, string>;
  /** The body. */
  body?: TypedData;
  /** The response's status, as text (e.g. "200"). */
  statusCode?: string;
  /** The response's cookies. */
  cookies?: HttpCookie[];
}

/** A response cookie in the worker's form (RpcHttpCookie; wrapped values as protobuf writes them). */
export interface HttpCookie {
  /** The cookie's name. */
  name?: string;
  /** Its value. */
  value?: string;
  /** The Domain attribute. */
  domain?: { value?: string } | null;
  /** The Path attribute. */
  path?: { value?: string } | null;
  /** The Expires attribute (seconds since the epoch). */
  expires?: { value?: { seconds?: number } } | null;
  /** The Secure attribute. */
  secure?: { value?: boolean } | null;
  /** The HttpOnly attribute. */
  httpOnly?: { value?: boolean } | null;
  /** The SameSite attribute ("explicitNone": SameSite=None written out). */
  sameSite?: "none" | "lax" | "strict" | "explicitNone";
  /** The Max-Age attribute (s). */
  maxAge?: { value?: number } | null;
}

/** One binding as the library registers it: its own options verbatim plus type and direction. */
export interface BindingInfo {
  /** The binding's type, e.g. "httpTrigger", "cosmosDB". */
  type: string;
  /** Whether the function reads it, writes it, or both. */
  direction: "in" | "out" | "inout";
  /** The binding's other options, as registered. */
  [option: string]: unknown;
}

/** A function as the programming model registers it with the worker. */
export interface FunctionMetadata {
  /** The function's name. */
  name: string;
  /** Its bindings, by name. */
  bindings: Record<string, BindingInfo>;
  /** Its retry policy (host.json-style: strategy, maxRetryCount, intervals), when it has one. */
  retryOptions?: Record<string, unknown>;
}

export type FunctionCallback = (...args: unknown[]) => unknown;
export type HookCallback = (context: object) => unknown;

/** A log level, as host.json names them; "none" turns a category off. */
export type LogLevel = "trace" | "debug" | "information" | "warning" | "error" | "critical" | "none";
export type LogCategory = "user" | "system" | "customMetric";

/** One binding's data for an invocation, by binding name. */
export interface ParameterBinding {
  /** The binding's name. */
  name: string;
  /** Its data; null or undefined when there is none. */
  data: TypedData | null | undefined;
}

/** What the host sends the worker to invoke a function. */
export interface InvocationRequest {
  /** The invocation's id. */
  invocationId: string;
  /** The trigger's and the input bindings' data. */
  inputData: ParameterBinding[];
  /** Values for binding expressions (`context.triggerMetadata`). */
  triggerMetadata?: Record<string, TypedData>;
  /** The retry attempt, when this invocation retries an earlier one. */
  retryContext?: { retryCount: number; maxRetryCount: number; exception?: { message?: string } };
  /** RpcTraceContext: the host sends one with every invocation (W3C traceparent of the invocation's activity). */
  traceContext?: { traceParent?: string; traceState?: string; attributes?: Record<string, string> };
}

/** What the worker answers an invocation with. */
export interface InvocationResponse {
  /** The invocation's id. */
  invocationId: string;
  /** The output bindings' data. */
  outputData?: ParameterBinding[];
  /** The function's return value (the `$return` binding). */
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
