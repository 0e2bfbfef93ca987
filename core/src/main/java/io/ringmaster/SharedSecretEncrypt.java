package io.ringmaster;

import org.jgroups.conf.ClassConfigurator;
import org.jgroups.protocols.SYM_ENCRYPT;

/**
 * {@code SYM_ENCRYPT} keyed by the cluster's shared secret (see {@link SharedSecret}) instead of a
 * keystore file: every member that knows the secret derives the same AES key. Set
 * {@code keystore_name} to use a keystore after all. Used by {@code config/jgroups/secure-tcp.xml}.
 */
public class SharedSecretEncrypt extends SYM_ENCRYPT {
  /** Our protocol id, outside the range JGroups reserves for its own protocols. */
  public static final short ID = 1917;

  static {
    if (ClassConfigurator.getProtocol(ID) == null) {
      ClassConfigurator.addProtocol(ID, SharedSecretEncrypt.class);
    }
  }

  @Override
  public void init() throws Exception {
    if (keystore_name == null && secret_key == null) {
      setSecretKey(SharedSecret.aesKey(SharedSecret.require(getClass().getSimpleName())));
    }
    super.init();
  }
}
