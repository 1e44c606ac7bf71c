// The suggestion helper lives in the SDK (plugins use it for their own config errors); kernel files import it here.
export { didYouMean } from '../sdk/did-you-mean.ts';
