// Test helper: one model turn as the runner hands it to a provider.
import type { TurnRequest } from '../lib/runtime/providers/provider.ts';

/** A turn for `model` with a short prompt and the ids a run passes; `overrides` replace any field. */
export function turnRequest(model: string, overrides: Partial<TurnRequest> = {}): TurnRequest {
  return {
    model,
    system: 'You are terse.',
    history: [],
    prompt: 'Say hi',
    signal: new AbortController().signal,
    run: { runId: 'run-1', sessionKey: 'hook:abc', agentId: 'main' },
    ...overrides,
  };
}
