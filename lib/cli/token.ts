// The token command: a new random hook token.

import { generateToken } from '../guard/token.ts';
import { type Command, COMMON } from './command.ts';

/** `hooks-ingress token`: prints a new random hook token. */
export const token: Command = {
  options: { help: COMMON.help },
  help: `Usage: hooks-ingress token

Print a new random hook token (32 bytes of entropy, base64url).
`,
  async run(_flags, _positionals, io) {
    io.stdout(`${generateToken()}\n`);
    return 0;
  },
};
