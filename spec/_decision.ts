// Test helpers: a policy decision read as the spec expects it, failing with what it got otherwise.
import assert from 'node:assert/strict';
import type { Decision } from '../lib/policy/decision.ts';

/** The value of a decision that must be an admission. */
export function value<T>(decision: Decision<T>): T {
  assert.ok(decision.ok, decision.ok ? '' : decision.error);
  return decision.value;
}

/** The message of a decision that must be a refusal. */
export function error<T>(decision: Decision<T>): string {
  assert.ok(!decision.ok, `expected a refusal, got ${JSON.stringify(decision)}`);
  return decision.error;
}
