import type { BindingInfo, FunctionCallback, FunctionMetadata, HookCallback } from "./coreTypes.js";
import { DevHostError } from "./errors.js";

/** The worker's Disposable (exported on the core API; the library and apps may construct it). */
export class Disposable {
  #callOnDispose?: () => unknown;
  constructor(callOnDispose: () => unknown) {
    this.#callOnDispose = callOnDispose;
  }
  static from(...disposables: { dispose(): unknown }[]): Disposable {
    return new Disposable(() => {
      for (const d of disposables) d.dispose();
    });
  }
  dispose(): void {
    const call = this.#callOnDispose;
    this.#callOnDispose = undefined;
    call?.();
  }
}

export interface RegisteredFunction {
  /** Exactly what the library handed to registerFunction (the contract tests compare it). */
  metadata: FunctionMetadata;
  callback: FunctionCallback;
  /** The binding whose type ends in "Trigger" (the library puts exactly one). */
  triggerName: string;
  trigger: BindingInfo;
}

export const HOOK_NAMES = ["appStart", "appTerminate", "preInvocation", "postInvocation", "log"] as const;
export type HookName = (typeof HOOK_NAMES)[number];

/** One loaded app's registrations: functions by name and hooks by kind, as the worker's channel keeps them. */
export class AppRegistry {
  readonly functions = new Map<string, RegisteredFunction>();
  readonly hooks = new Map<HookName, HookCallback[]>(HOOK_NAMES.map((n) => [n, []]));
  /** Shared by every hook of the app (the worker's appHookData). */
  readonly appHookData: Record<string, unknown> = {};
  /** appStart/appTerminate's own hookData. */
  readonly appLevelOnlyHookData: Record<string, unknown> = {};
  finishedStartup = false;

  registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable {
    if (this.finishedStartup) {
      throw new DevHostError("A function can only be registered during app startup.", { code: "AppLoad" });
    }
    if (this.functions.has(metadata.name)) {
      throw new DevHostError(`A function with id '${metadata.name}' has already been registered.`, {
        code: "DuplicateFunction",
      });
    }
    const entry = Object.entries(metadata.bindings).find(([, b]) => /trigger$/i.test(b.type));
    if (!entry) {
      throw new DevHostError(`Function '${metadata.name}' has no trigger binding.`, { code: "AppLoad" });
    }
    const [triggerName, trigger] = entry;
    this.functions.set(metadata.name, { metadata, callback, triggerName, trigger });
    return new Disposable(() => {
      if (this.finishedStartup) {
        throw new DevHostError("A function can only be disposed during app startup.", { code: "AppLoad" });
      }
      this.functions.delete(metadata.name);
    });
  }

  registerHook(name: string, callback: HookCallback): Disposable {
    const list = this.hooks.get(name as HookName);
    // The worker answers an unknown hook name with a RangeError (the library maps it for log hooks).
    if (!list) throw new RangeError(`Unrecognized hook "${name}"`);
    list.push(callback);
    return new Disposable(() => {
      const at = list.indexOf(callback);
      if (at >= 0) list.splice(at, 1);
    });
  }

  /**
   * Runs log hooks synchronously (they may rewrite `level` and `message`, as with the worker) and returns the
   * log entry to write. A throwing log hook is skipped rather than failing the log call.
   */
  applyLogHooks<T extends { level: string; message: string; category: string }>(entry: T): T {
    const hooks = this.hooks.get("log") ?? [];
    if (hooks.length === 0) return entry;
    const context = { hookData: {}, appHookData: this.appHookData, ...entry };
    for (const hook of hooks) {
      try {
        hook(context);
      } catch {
        // A log hook must not turn logging into a failure.
      }
    }
    return { ...entry, level: context.level, message: context.message };
  }

  /** Runs the hooks of one kind in registration order, awaiting each (the worker's executeHooks). */
  async runHooks(name: HookName, context: object): Promise<void> {
    for (const hook of [...(this.hooks.get(name) ?? [])]) await hook(context);
  }
}
