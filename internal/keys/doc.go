// Package keys builds every Redis key and channel name redisync uses, in
// Redisson 3.x's layout. No other package concatenates key names: hash tags
// and prefixes live here, in one place.
//
// Redisson wraps a primitive's name in braces ("{name}") when it builds the
// names of the keys and channels that belong to it, unless the name already
// contains "{". The main key is the bare name. Both hash to the same cluster
// slot: "{orders:42}" hashes "orders:42", and so does the bare key
// "orders:42"; for "a{b}c" every name contains the tag "{b}".
package keys
