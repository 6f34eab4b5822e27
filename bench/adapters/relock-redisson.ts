// relock in the Redisson layout (issue 21): the relock adapter with `layout: 'redisson'`, its locks on
// RLock's keys. Beside relock in its own layout in the same run: the price of the layout.
import { bundle, relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

export const create: Create = relockAdapter(bundle, undefined, undefined, { layout: 'redisson' });
