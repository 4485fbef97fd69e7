// `@cosmos-feed/core`: what every cosmos-feed library shares — the error base, the clock, and the Cosmos DB
// helpers (creating if missing, optimistic concurrency, retries, session tokens). Subpaths: ./errors, ./clock,
// ./json, ./concurrency, ./cosmos and its modules, ./testing (FakeClock).
export { type Clock, systemClock } from "./clock.js";
export * from "./cosmos/index.js";
