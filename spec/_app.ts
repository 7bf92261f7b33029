// Test helpers for an in-process app and the things every spec needs around it.
import type { Logger } from '../lib/log.ts';

/** A logger that drops everything (for tests that do not look at logs). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
