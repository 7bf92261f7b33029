import type { ProviderConfig } from '../../config/types.ts';
import type { Provider } from './provider.ts';
import { createAnthropicProvider } from './anthropic.ts';
import { createCommandProvider } from './command.ts';
import { createOpenAiProvider } from './openai.ts';

/** Builds the provider a `models.providers` entry describes (the config check made sure it is complete). */
export function createProvider(config: ProviderConfig): Provider {
  const common = { baseUrl: config.baseUrl ?? '', ...(config.apiKey === undefined ? {} : { apiKey: config.apiKey }), ...(config.headers === undefined ? {} : { headers: config.headers }) };
  switch (config.api) {
    case 'openai-completions':
      return createOpenAiProvider(common);
    case 'anthropic-messages':
      return createAnthropicProvider(common);
    case 'command':
      return createCommandProvider({ command: config.command ?? [] });
  }
}

/** One provider per configured id, built on first use. */
export function providerRegistry(providers: Readonly<Record<string, ProviderConfig>>): (id: string) => Provider | null {
  const built = new Map<string, Provider>();
  return (id) => {
    const config = Object.hasOwn(providers, id) ? providers[id] : undefined;
    if (config === undefined) return null;
    let provider = built.get(id);
    if (provider === undefined) built.set(id, (provider = createProvider(config)));
    return provider;
  };
}
