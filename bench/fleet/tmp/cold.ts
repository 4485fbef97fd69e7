import { Fleet } from "../fleet.js";
import { seededRandom } from "../../lib/prng.js";
Math.random = seededRandom(1 ^ 0x5eed);
const hosts = Number(process.argv[2] ?? 30), leases = Number(process.argv[3] ?? 300);
const fleet = new Fleet({ algorithm: "ours", leases, seed: 1 });
fleet.add(hosts);
for (let s = 0; s < 60; s++) {
  await fleet.run(1000);
  const { perHost, leases: l, unowned } = fleet.ownership();
  const c = [...perHost.values()];
  const hist = new Map<number, number>();
  for (const x of c) hist.set(x, (hist.get(x) ?? 0) + 1);
  const m = fleet.leases.meter.totals();
  console.log(s + 1, "unowned", unowned, "bal", fleet.balanced(), [...hist].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}:${v}`).join(" "), "moves", fleet.counts.moves, "req", m.requests);
  if (fleet.balanced() && s > 40) break;
}
process.exit(0);
