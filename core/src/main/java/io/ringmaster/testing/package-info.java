/**
 * For testing the code that embeds Ringmaster: real nodes in one JVM and the failures a test needs
 * ({@link io.ringmaster.testing.LocalCluster}), and a listener that checks what a node was told
 * against what its ring says ({@link io.ringmaster.testing.OwnershipFold}). Both use no test
 * framework: they throw or return what a test asserts on.
 */
package io.ringmaster.testing;
