import { Fleet } from "../fleet.js";
import { seededRandom } from "../../lib/prng.js";
Math.random = seededRandom(1 ^ 0x5eed);
const hosts = Number(process.argv[2] ?? 30), leases = Number(process.argv[3] ?? 300);
const fleet = new Fleet({ algorithm: "ours", leases, seed: 1 });
const tenth = Math.max(1, Math.ceil(hosts / 10));
const pick = (n: number) => { const live = fleet.live(); return live.filter((_, i) => i % Math.max(1, Math.floor(live.length / n)) === 0).slice(0, n); };
const show = (s: number) => {
  const { perHost, leases: l, unowned } = fleet.ownership();
  const hist = new Map<number, number>();
  for (const x of perHost.values()) hist.set(x, (hist.get(x) ?? 0) + 1);
  console.log(s, "hosts", perHost.size, "leases", l, "unowned", unowned, "fair", (l / perHost.size).toFixed(2), "bal", fleet.balanced(), [...hist].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(" "), "moves", fleet.counts.moves);
};
fleet.add(hosts); await fleet.untilBalanced(600_000); await fleet.run(170_000);
fleet.add(tenth); await fleet.untilBalanced(600_000); await fleet.run(170_000);
const target = process.argv[4] ?? "in";
const orig = fleet.leases.observer!;
const t0 = fleet.sim.elapsed();
fleet.leases.observer = (b, a) => { if (String(a?.id ?? "").endsWith(".fleet")) console.log("bump at", fleet.sim.elapsed() - t0, "by", a?.by); orig(b, a); };
if (target === "in") fleet.stop(pick(tenth));
else { fleet.stop(pick(tenth)); await fleet.untilBalanced(600_000); await fleet.run(170_000); fleet.crash(pick(tenth)); }
for (let s = 1; s <= 100; s++) { await fleet.run(1000); show(s); if (fleet.balanced() && s > 40) break; }
process.exit(0);
