// The schema of the state section, apart from the rest of the file's.
//
// Apart from the rest of the file's schema: a command that reads only the state directory checks
// this section alone and loads nothing of the other keys' rules.

import { object, optional, string } from '../schema.ts';

/** The config file's `state` section. */
export const stateSchema = object({ dir: optional(string({ nonEmpty: true })) });
