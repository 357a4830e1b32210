// A role or scope name as tokens carry it, the config declares it and API keys narrow to it.
import { z } from 'zod';

/** A role or scope name as tokens carry it: no spaces (an OAuth `scope` is space-separated). */
export const ROLE_NAME_PATTERN = /^[A-Za-z0-9._:/-]{1,64}$/;

export const RoleNameSchema = z.string().regex(ROLE_NAME_PATTERN, {
  error: 'must be 1 to 64 letters, digits and . _ : / -',
});
