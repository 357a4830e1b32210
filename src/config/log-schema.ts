// The `log` section of the config schema.
import { z } from 'zod';
import * as d from './defaults.js';

/** The log, one JSON line per event on standard output (pino). */
export const LogSchema = z.strictObject({
  /** The least severe level written (pino's levels; `silent`: none). */
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default(d.DEFAULT_LOG_LEVEL),
  /**
   * One line per request at info. Off where a load balancer in front already
   * keeps access logs: it is a measurable share of each request's CPU (10–21 %
   * of a proxied request's, measured).
   */
  access: z.boolean().default(true),
});
