/**
 * Pure reward helpers shared by services and the trainer (no I/O, no gRPC, no NATS).
 * @module
 */
export type { OverlongOptions } from "./overlong.js";
export { checkOverlongOptions, dapoOverlongPenalty, OverlongOptionsError } from "./overlong.js";
export { pyFloatRepr, pyStrRepr } from "./python.js";
