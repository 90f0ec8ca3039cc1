/** class-transformer's metadata (`@Type`, `@Transform`), which it keeps in this module. */
declare module 'class-transformer/cjs/storage' {
  export * from 'class-transformer/types/storage';
}
