import { join } from "node:path";
import type { BindingLog } from "./cosmos/provision.js";
import type { TriggerRunnerFactory } from "./host.js";
import type { HostLogger } from "./logger.js";
import { fileScheduleMonitor, memoryScheduleMonitor, startTimer } from "./timer/timer.js";

export function bindingLog(logger: HostLogger, category: string): BindingLog {
  return (level, message, extras) =>
    logger.log(level, message, { category, invocationId: extras?.invocationId });
}

/** Where `cosmos-feed start` keeps timer schedule statuses: `<data folder>/timers` (the --data-dir folder). */
export function timerStatusDir(dataDir: string): string {
  return join(dataDir, "timers");
}

/**
 * The timerTrigger runner: timer/startTimer (NCRONTAB, runOnStartup, schedule monitor, retry) wired to the host's
 * invocation path. The timer object reaches the handler as the host serializes TimerInfo (JSON; the library
 * camel-cases it). Schedule statuses persist as one file per timer in `statusDir` when given, else in memory.
 */
export function timerTriggerRunner(options: { statusDir?: string } = {}): TriggerRunnerFactory {
  return async (fn, context) => {
    const binding = fn.bindings[fn.triggerName];
    const running = await startTimer({
      functionName: fn.metadata.name,
      schedule: String(binding.schedule),
      runOnStartup: binding.runOnStartup === true,
      useMonitor: typeof binding.useMonitor === "boolean" ? binding.useMonitor : undefined,
      monitor: options.statusDir ? fileScheduleMonitor(options.statusDir) : memoryScheduleMonitor(),
      retry: fn.metadata.retryOptions,
      log: bindingLog(context.logger, `Function.${fn.metadata.name}`),
      invoke: async (timer, invocation) => {
        const outcome = await context.invoke({
          invocationId: invocation.invocationId,
          // The host's wording for every timer execution (scheduled, past due or on startup).
          reason: `Timer fired at ${new Date().toISOString()}`,
          inputData: [{ name: fn.triggerName, data: { json: JSON.stringify(timer) } }],
          retryContext: {
            retryCount: invocation.retryContext.retryCount,
            maxRetryCount: invocation.retryContext.maxRetryCount,
          },
        });
        if (outcome.error !== undefined) throw outcome.error;
      },
    });
    return { stop: () => running.stop() };
  };
}
