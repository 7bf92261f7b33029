// Test helper: a local stand-in for an OpenAI-compatible model server, for the released OpenClaw
// gateway to call. It records every chat completion it is asked for, so a spec can tell which
// texts reached a model turn, and answers each with NO_REPLY (OpenClaw's silent reply), streamed
// when the request asks for a stream, as OpenAI's API shapes it.
import type { ServerResponse } from 'node:http';
import type { TestContext } from 'node:test';
import { fake, json } from './_fake-server.ts';
import { openAiCompletion } from './_turn.ts';

/** The stand-in: its base URL for a provider config, and what it was asked. */
export interface StandinModel {
  /** `http://127.0.0.1:N/v1`. */
  baseUrl: string;
  /** The messages of each chat completion request, in order, as JSON text. */
  prompts: string[];
  /** Those of `texts` that appear in some prompt (each once, in the order given). */
  reached(texts: readonly string[]): string[];
}

/** The one reply: OpenClaw's token for "nothing to say", so no run announces anything. */
export const STANDIN_REPLY = 'NO_REPLY';

/** Starts the stand-in for `t`. */
export async function startStandinModel(t: TestContext): Promise<StandinModel> {
  const prompts: string[] = [];
  const server = await fake(t, (req, res) => {
    const path = req.url.split('?')[0] ?? '';
    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, {
        object: 'list',
        data: [{ id: 'echo', object: 'model', created: 0, owned_by: 'standin' }],
      });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return json(res, 404, {
        error: { message: `Unknown request ${req.method} ${path}`, type: 'invalid_request_error' },
      });
    }
    let body: { messages?: unknown; stream?: unknown; model?: unknown };
    try {
      body = JSON.parse(req.body) as typeof body;
    } catch {
      return json(res, 400, {
        error: { message: 'We could not parse the JSON body of your request.', type: 'invalid_request_error' },
      });
    }
    prompts.push(JSON.stringify(body.messages ?? null));
    if (body.stream === true) return _stream(res, String(body.model));
    json(res, 200, openAiCompletion(STANDIN_REPLY));
  });
  return {
    baseUrl: `${server.url}/v1`,
    prompts,
    reached: (texts) => texts.filter((text) => prompts.some((prompt) => prompt.includes(_inJson(text)))),
  };
}

// A text as it appears inside a JSON-encoded prompt.
function _inJson(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function _stream(res: ServerResponse, model: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const chunk = (delta: Record<string, unknown>, finish: string | null, usage?: unknown) =>
    `data: ${
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
        ...(usage === undefined ? {} : { usage }),
      })
    }\n\n`;
  res.write(chunk({ role: 'assistant', content: STANDIN_REPLY }, null));
  res.write(chunk({}, 'stop', { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }));
  res.end('data: [DONE]\n\n');
}
