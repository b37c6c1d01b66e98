// The TypeScript shapes of the config, checked key for key against schema/ by the type checker
// (`npm run check`): a key in a schema and not in its type, or in a type and not in its schema, is a
// compile error naming the key. Nothing here runs; tsc checks it with the rest of the project.
//
// The hooks block is read by two owners: the core (HooksBlock; of hooks.gmail only what the gmail
// preset's runs use) and the Gmail bridge (GmailBlock: the watcher's keys). The gateway file's type
// leaves out what others read: `hooks` (the plugin), `gateway.trustedProxies` (plugin/config) and
// `$schema` (for editors).
import type hooksSchema from '../../schema/hooks-config.schema.json';
import type mappingSchema from '../../schema/mapping.schema.json';
import type gatewaySchema from '../../schema/gateway-config.schema.json';
import type { HooksBlock } from '../../plugin/config/hooks-config.ts';
import type { MappingConfig } from '../../plugin/mappings/compile-mappings.ts';
import type { GmailBlock } from '../../gmail/gmail-settings.ts';
import type { GatewayFile } from '../../plugin/hosts/standalone/server/settings.ts';

/** The keys a schema node declares: its properties, its items' or its map values'. */
type Props<S> = S extends { properties: infer P }
  ? P
  : S extends { items: infer I }
    ? Props<I>
    : S extends { additionalProperties: infer A }
      ? Props<A>
      : Record<never, never>;

/** The object a type describes: through optional, arrays and string-keyed maps. */
type Shape<T> =
  NonNullable<T> extends readonly (infer E)[]
    ? Shape<E>
    : string extends keyof NonNullable<T>
      ? Shape<NonNullable<T>[string & keyof NonNullable<T>]>
      : NonNullable<T>;

type SchemaKeys<S> = keyof Props<S> & string;
type TypeKeys<T> = keyof Shape<T> & string;

/** Every key that differs, as a sentence; never when schema and type agree at every depth. */
type Mismatch<S, T, At extends string> =
  | `${At}${Exclude<SchemaKeys<S>, TypeKeys<T>>} is in the schema, not in the type`
  | `${At}${Exclude<TypeKeys<T>, SchemaKeys<S>>} is in the type, not in the schema`
  | {
      [K in SchemaKeys<S> & TypeKeys<T>]: [SchemaKeys<Props<S>[K]>] extends [never]
        ? never
        : Mismatch<Props<S>[K], Shape<T>[K], `${At}${K}.`>;
    }[SchemaKeys<S> & TypeKeys<T>];

/** Compiles only when nothing differs; otherwise the error quotes a sentence naming the key. */
type Agrees<M extends never> = M;

type Hooks = Omit<HooksBlock, 'gmail'> & { gmail?: HooksBlock['gmail'] & GmailBlock };
type Gateway = GatewayFile & {
  hooks?: unknown;
  $schema?: string;
  gateway?: { trustedProxies?: string[] };
};

export type HooksBlockAgrees = Agrees<Mismatch<typeof hooksSchema, Hooks, 'hooks.'>>;
export type MappingConfigAgrees = Agrees<Mismatch<typeof mappingSchema, MappingConfig, 'hooks.mappings[].'>>;
export type GatewayFileAgrees = Agrees<Mismatch<typeof gatewaySchema, Gateway, ''>>;
