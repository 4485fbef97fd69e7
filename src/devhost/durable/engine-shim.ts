import { applyMessage } from "./engine.js";
import type { ApplyMessages, OutboundWork, WorkItemResult } from "./types.js";

/** Temporary: applyMessages over the one-message engine (replaced by engine.ts applyMessages). */
export const applyMessagesOneByOne: ApplyMessages = async (state, messages, now, invoke) => {
  let current = state;
  const work: OutboundWork[] = [];
  const consumed: string[] = [];
  const dropped: WorkItemResult["dropped"] = [];
  const newEvents: WorkItemResult["newEvents"] = [];
  let invocations = 0;
  let remaining = messages;
  let progress = true;
  while (progress && remaining.length > 0) {
    progress = false;
    const left = [];
    for (const m of remaining) {
      const r = await applyMessage(current, m, now, async (n, i) => {
        invocations++;
        return invoke(n, i);
      });
      if (!r.consumed) {
        left.push(m);
        continue;
      }
      progress = true;
      consumed.push(m.key);
      if (r.dropped) dropped.push({ key: m.key, reason: r.dropped });
      if (r.state) current = r.state;
      newEvents.push(...r.newEvents);
      work.push(...r.work);
    }
    remaining = left;
  }
  return { state: current, newEvents, work, consumed, dropped, invocations };
};
