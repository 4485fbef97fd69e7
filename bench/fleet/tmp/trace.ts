import { Fleet } from "../fleet.js";
import { seededRandom } from "../../lib/prng.js";
Math.random = seededRandom(1 ^ 0x5eed);
const hosts = Number(process.argv[2] ?? 30), leases = Number(process.argv[3] ?? 300);
const ev = process.argv[4] ?? "scale-in";
const fleet = new Fleet({ algorithm: "ours", leases, seed: 1 });
fleet.add(hosts);
await fleet.untilBalanced(600_000);
await fleet.run(60_000);
const tenth = Math.ceil(hosts / 10);
const live = fleet.live();
const pick = live.filter((_, i) => i % Math.floor(live.length / tenth) === 0).slice(0, tenth);
if (ev === "scale-in") fleet.stop(pick);
else if (ev === "rolling") { const all = fleet.live(); for (let i = 0; i < all.length; i += tenth) { fleet.stop(all.slice(i, i + tenth)); fleet.add(Math.min(tenth, all.length - i)); if (i + tenth < all.length) await fleet.run(30_000); } }
else if (ev === "split") fleet.split(0.1);
else if (ev === "out") fleet.add(tenth);
else if (ev === "crash") fleet.crash(pick);
for (let s = 0; s < 120; s++) {
  await fleet.run(1000);
  const { perHost, leases: l, unowned } = fleet.ownership();
  const c = [...perHost.values()];
  const fair = l / perHost.size;
  const hist = new Map<number, number>();
  for (const x of c) hist.set(x, (hist.get(x) ?? 0) + 1);
  console.log(s + 1, "hosts", perHost.size, "leases", l, "unowned", unowned, "fair", fair.toFixed(2), "bal", fleet.balanced(), [...hist].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(" "), "moves", fleet.counts.moves);
  if (fleet.balanced() && s > 90) break;
}
process.exit(0);
