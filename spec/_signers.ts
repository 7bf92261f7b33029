// Signers for the spec tests: each provider's own library where it publishes one, else the algorithm
// as the provider's documentation states it (written here independently of lib/).
import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import twilio from 'twilio';

/** A Standard Webhooks secret: `whsec_` and 32 random-looking bytes in base64. */
export const WHSEC = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
export const WHSEC_2 = `whsec_${Buffer.from('fedcba9876543210fedcba9876543210').toString('base64')}`;

/** What a signer gets: the secret, the exact body text, the send time, the delivery id. */
export interface SignInput {
  secret: string;
  body: string;
  nowSeconds: number;
  id: string;
  /** twilio: the URL it calls. */
  url?: string;
}

type Signer = (input: SignInput) => Promise<Record<string, string>>;

const stripeClient = new Stripe('sk_test_not_a_real_key');

function _hex(algorithm: string, key: string, text: string): string {
  return createHmac(algorithm, key).update(text, 'utf8').digest('hex');
}

/** Signers by the name the tests use (`svix` is Standard Webhooks with Svix's header names). */
export const SIGNERS: Record<string, Signer> = {
  'standard-webhooks': async ({ secret, body, nowSeconds, id }) => {
    const signature = new StandardWebhook(secret).sign(id, new Date(nowSeconds * 1000), body);
    return { 'webhook-id': id, 'webhook-timestamp': String(nowSeconds), 'webhook-signature': signature };
  },
  svix: async ({ secret, body, nowSeconds, id }) => {
    const signature = new SvixWebhook(secret).sign(id, new Date(nowSeconds * 1000), body);
    return { 'svix-id': id, 'svix-timestamp': String(nowSeconds), 'svix-signature': signature };
  },
  github: async ({ secret, body, id }) => ({
    'x-hub-signature-256': await githubSign(secret, body),
    'x-github-delivery': id,
    'x-github-event': 'push',
  }),
  // Meta: "sha256=" and the hex HMAC-SHA256 of the payload, keyed by the app secret.
  meta: async ({ secret, body }) => ({ 'x-hub-signature-256': `sha256=${_hex('sha256', secret, body)}` }),
  stripe: async ({ secret, body, nowSeconds }) => ({
    'stripe-signature': await stripeClient.webhooks.generateTestHeaderStringAsync({
      payload: body,
      secret,
      timestamp: nowSeconds,
    }),
  }),
  // Slack: "v0=" and the hex HMAC-SHA256 of "v0:<timestamp>:<body>", keyed by the signing secret.
  slack: async ({ secret, body, nowSeconds }) => ({
    'x-slack-request-timestamp': String(nowSeconds),
    'x-slack-signature': `v0=${_hex('sha256', secret, `v0:${nowSeconds}:${body}`)}`,
  }),
  // Shopify: the base64 HMAC-SHA256 of the raw body, keyed by the app's client secret.
  shopify: async ({ secret, body, id }) => ({
    'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body, 'utf8').digest('base64'),
    'x-shopify-webhook-id': id,
    'x-shopify-topic': 'orders/create',
  }),
  twilio: async ({ secret, body, url, id }) => {
    const params: Record<string, string | string[]> = {};
    for (const [name, value] of new URLSearchParams(body)) {
      const prior = params[name];
      params[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
    }
    return {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(secret, url ?? '', params),
      'i-twilio-idempotency-token': id,
    };
  },
  gitlab: async ({ secret, id }) => ({
    'x-gitlab-token': secret,
    'x-gitlab-event-uuid': id,
    'x-gitlab-event': 'Push Hook',
  }),
  // The generic scheme as the specs configure it: X-Signature, sha512, hex, prefix "sha512=".
  hmac: async ({ secret, body }) => ({ 'x-signature': `sha512=${_hex('sha512', secret, body)}` }),
  token: async ({ secret }) => ({ authorization: `Bearer ${secret}` }),
};

/** Real GitHub payloads, by event name (from @octokit/webhooks-examples). */
export function githubExample(event: string, index = 0): Record<string, unknown> {
  const require = createRequire(import.meta.url);
  const all = require('@octokit/webhooks-examples') as { name: string; examples: Record<string, unknown>[] }[];
  const found = all.find((e) => e.name === event)?.examples[index];
  if (found === undefined) throw new RangeError(`Cannot find a GitHub example: no ${event}[${index}]`);
  return found;
}
