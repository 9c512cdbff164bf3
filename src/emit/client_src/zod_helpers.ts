const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
/** A required property: present (even `undefined` is absent), then the schema. */
const present = (schema: z.ZodType): z.ZodType =>
  z.custom<unknown>((v) => v !== undefined, "required").pipe(schema);
/** JSON Schema counts code points. */
const chars = (v: string): number => Array.from(v).length;
/** A schema's pattern, compiled once; one JavaScript cannot compile checks nothing. */
const pattern = (source: string): ((v: string) => boolean) => {
  let re: RegExp | null = null;
  try {
    re = new RegExp(source, "u");
  } catch {
    re = null;
  }
  return (v) => re === null || re.test(v);
};
const canonical = (v: unknown): string =>
  isObject(v)
    ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`
    : Array.isArray(v)
      ? `[${v.map(canonical).join(",")}]`
      : JSON.stringify(v);
const sameJson = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);
const unique = (items: unknown[]): boolean => new Set(items.map(canonical)).size === items.length;

