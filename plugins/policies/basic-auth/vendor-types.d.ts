// apache-crypt@1 ships no typings: traditional DES crypt(3), `(password, salt?) => hash`.
declare module 'apache-crypt' {
  function apacheCrypt(password: string, salt?: string): string;
  export default apacheCrypt;
}
