// `@cosmos-feed/core/testing`: a clock the tests move by hand (timers fire when it passes their time).
export { type Clock, FakeClock } from "./clock.js";
