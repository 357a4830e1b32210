// ESLint flat config. Syntax-only presets (no type-checked rules) so `npm run lint` stays fast;
// the compiler (`npm run typecheck`) already does the type-level checking.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'public/**'],
  },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      // `_name` marks a parameter an interface makes us accept, or a property pulled out of an object
      // so that `...rest` goes on without it (`const { sub: _sub, ...key } = stored`): both on purpose.
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          args: 'after-used',
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          ignoreRestSiblings: true,
        },
      ],
      // A `let` that a closure reads before its one assignment (a timer cleared by a stop() written
      // above the setTimeout) cannot be a const where it is declared.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'max-len': [
        'error',
        {
          code: 160,
          ignoreUrls: true,
          ignoreRegExpLiterals: true,
          // An import line is as long as the names it brings in; breaking it helps no reader.
          ignorePattern: '^\\s*(import|export)\\s.*\\sfrom\\s',
        },
      ],
    },
  },
);
