// For the dev host (and anyone embedding the emulator): request signing, the RU meter's arithmetic, the TLS
// certificate the emulator serves, and the data folder's creation — the public names of what it used to reach into.
export { MasterKeyAuth, masterKeyHeaders, WELL_KNOWN_EMULATOR_KEY } from "./auth.js";
export { CosmosError } from "./errors.js";
export { ALLOWED_HOSTS_ENV } from "./hostGuard.js";
export {
  effectivePartitionKey,
  type PartitionKeyComponent,
  type PartitionKeyDefinitionLike,
} from "./partitioning/epk.js";
export { RANGE_COUNT_HEADER } from "./routes/resources.js";
export {
  changeFeedCharge,
  patchCharge,
  pointReadCharge,
  queryCharge,
  RuModel,
  writeCharge,
} from "./ru/charges.js";
export { type MeterEntry, type MeterSnapshot, meterDelta, type OperationKind, RuMeter } from "./ru/meter.js";
export {
  DEFAULT_CHANGE_FEED_RETENTION_MS,
  DEFAULT_TTL_SWEEP_INTERVAL_MS,
  type EmulatorOptions,
  EmulatorStartError,
  type RunningEmulator,
  startEmulator,
} from "./server.js";
export { type CapacityMode, SERVERLESS_RU_PER_PARTITION } from "./store/account.js";
export { ensureDirectory } from "./store/directory.js";
export { DEFAULT_CERTIFICATE_NAMES, ensureCertificate, type StoredCertificate } from "./tls/certificate.js";
