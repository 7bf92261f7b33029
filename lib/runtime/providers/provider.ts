// The interface of a model provider.

import type { Thinking } from '../../model/actions.ts';
import type { Attempt } from '../../retry.ts';

/** One earlier turn of a session's transcript. */
export interface ChatMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** One model turn: what a provider sends, whichever wire format it speaks. */
export interface TurnRequest {
  /** The model id as the provider knows it (the part after `provider/`). */
  model: string;
  system: string;
  history: readonly ChatMessage[];
  prompt: string;
  thinking?: Thinking;
  /** Aborts the call at the run's time bound. */
  signal: AbortSignal;
  /** Who asks: passed to `command` providers as HOOKS_INGRESS_* variables. */
  run: { runId: string; sessionKey: string; agentId: string; workspace?: string };
}

/**
 * A model API. One call is one attempt; the runner retries retryable failures within the run's
 * bound. Failure messages are the provider's own words, trimmed, and never carry a secret.
 */
export interface Provider {
  complete(request: TurnRequest): Promise<Attempt<string>>;
}
