// relock before this change: the same adapter as relock, over a bundle built from an earlier commit
// (lib/baseline.ts; run.ts builds it and passes it as RELOCK_BASELINE_BUNDLE).
import { relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

export const create: Create = async (url) => {
  const from = process.env.RELOCK_BASELINE_BUNDLE;
  if (!from) throw new Error('not available: no baseline bundle (RELOCK_BASELINE_BUNDLE is unset; run.ts builds it)');
  return relockAdapter(from)(url);
};
