// The problems of the ConfigError a call throws; a call that does not throw one fails the test.
import { expect } from 'vitest';
import { ConfigError } from '../../src/config-load/load.js';

export function configProblems(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}
