/**
 * Fault injection into the real @azure/cosmos pipeline (its request plugins): the SDK, the socket and the
 * emulator stay real; a rule only replaces or delays one kind of request, for failures the emulator cannot be
 * asked to produce (a 503 on one delete, a missing session token, a write that always loses its race).
 */
import type { CosmosClientOptions, PluginConfig, RequestContext } from "@azure/cosmos";

export interface FaultRule {
  /** Which requests: e.g. ({method, path}) => method === "DELETE" && path.includes("/docs/"). */
  match: (context: RequestContext) => boolean;
  /** Runs instead of (or around) the request: call `next()` to send it. */
  run: (context: RequestContext, next: () => Promise<unknown>) => Promise<unknown>;
}

/** Client options adding the rules (`plugins` is a hidden option of CosmosClientOptions, hence the cast). */
export function faultPlugins(...rules: FaultRule[]): Partial<CosmosClientOptions> {
  const plugins: PluginConfig[] = [
    {
      on: "request",
      plugin: async (context, _diagnostics, next) => {
        const rule = rules.find((r) => r.match(context));
        if (!rule) return next(context);
        return rule.run(context, () => next(context)) as ReturnType<typeof next>;
      },
    },
  ];
  return { plugins } as Partial<CosmosClientOptions>;
}

/** An error shaped as the SDK's for a service status (it reads `code` and `headers`). */
export function serviceError(code: number, message = `injected ${code}`): Error {
  return Object.assign(new Error(message), { code, headers: {}, substatus: 0 });
}
