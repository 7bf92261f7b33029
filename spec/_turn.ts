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

/** An OpenAI chat completion whose one choice says `content`, as the real API shapes it. */
export function openAiCompletion(content: unknown): unknown {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'gpt-test',
    choices: [{
      index: 0,
      message: { role: 'assistant', content, refusal: null },
      finish_reason: 'stop',
      logprobs: null,
    }],
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  };
}

/** An Anthropic message with these content blocks, as the real API shapes it. */
export function anthropicMessage(content: unknown[], stopReason = 'end_turn'): unknown {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 3 },
  };
}
