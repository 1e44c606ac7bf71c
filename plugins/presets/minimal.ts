import backend from '../backends/backend/plugin.ts';
import host from '../backends/host/plugin.ts';

/** The smallest useful distribution: plain HTTP reverse proxying to hosts and named backends. */
export const minimalPreset = [host, backend] as const;
export default minimalPreset;
