// Builds the provider a models.providers entry describes, once per id (its file imported on first use).

import type { ProviderConfig } from '../../config/types.ts';
import type { Provider } from './provider.ts';

type Api = ProviderConfig['api'];

// Each wire format's provider, imported when a configured provider is first used: a service whose
// models all speak one API never loads the others.
const PROVIDERS: Readonly<Record<Api, () => Promise<(config: ProviderConfig) => Provider>>> = {
  'openai-completions': async () => {
    const { createOpenAiProvider } = await import('./openai.ts');
    return (config) => createOpenAiProvider(_common(config));
  },
  'anthropic-messages': async () => {
    const { createAnthropicProvider } = await import('./anthropic.ts');
    return (config) => createAnthropicProvider(_common(config));
  },
  command: async () => {
    const { createCommandProvider } = await import('./command.ts');
    return (config) => createCommandProvider({ command: config.command ?? [] });
  },
};

function _common(config: ProviderConfig): { baseUrl: string; apiKey?: string; headers?: Record<string, string> } {
  return {
    baseUrl: config.baseUrl ?? '',
    ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }),
    ...(config.headers === undefined ? {} : { headers: config.headers }),
  };
}

/** Builds the provider a `models.providers` entry describes (the config check made sure it is complete). */
export async function createProvider(config: ProviderConfig): Promise<Provider> {
  return (await PROVIDERS[config.api]())(config);
}

/** One provider per configured id, built (and its module imported) on first use. */
export function providerRegistry(
  providers: Readonly<Record<string, ProviderConfig>>,
): (id: string) => Promise<Provider | null> {
  const built = new Map<string, Promise<Provider>>();
  return async (id) => {
    const config = Object.hasOwn(providers, id) ? providers[id] : undefined;
    if (config === undefined) return null;
    let provider = built.get(id);
    if (provider === undefined) {
      built.set(id, provider = createProvider(config));
      // A provider that failed to build is tried again on the next use, as before it was cached.
      provider.catch(() => built.delete(id));
    }
    return provider;
  };
}
