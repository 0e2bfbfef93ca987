package io.ringmaster.bench;

import com.google.common.hash.Hashing;
import io.ringmaster.ring.HashRing;
import io.ringmaster.ring.Member;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaNodeLocator;
import net.spy.memcached.MemcachedNode;
import net.spy.memcached.util.DefaultKetamaNodeLocatorConfiguration;
import org.openjdk.jmh.infra.Blackhole;

/**
 * One rival in {@link LookupBenchmark}: finds the owner of a key and hands it to a blackhole (so
 * that {@code hashonly} can consume a {@code long} without boxing it). A fork of JMH runs one
 * parameter combination, so each fork loads one implementation and the call stays monomorphic.
 */
interface Locator {

  /** The {@code @Param} values of {@code impl}, as names. */
  String RINGMASTER = "ringmaster";
  String TREEMAP = "treemap";
  String SORTED = "sorted";
  String KETAMA = "ketama";
  String JUMP = "jump";
  String HASHONLY = "hashonly";

  /** Primary owner of a String key (consumed by the blackhole). */
  void owner(String key, Blackhole bh);

  /** Primary owner of a UTF-8 key. */
  void owner(byte[] key, Blackhole bh);

  /** The first {@code n} distinct owners. */
  default void owners(String key, int n, Blackhole bh) {
    throw new UnsupportedOperationException(getClass().getSimpleName() + " has no replica walk");
  }

  static Locator create(String impl, List<Member> members, int virtualNodes) {
    switch (impl) {
      case RINGMASTER:
        return new Ringmaster(HashRing.builder().virtualNodes(virtualNodes).addAll(members).build());
      case TREEMAP:
        return new TreeMapLocator(new TreeMapRing(members, virtualNodes));
      case SORTED:
        return new SortedArray(members, virtualNodes);
      case KETAMA:
        return new Ketama(members.size(), virtualNodes);
      case JUMP:
        return new Jump(members);
      case HASHONLY:
        return new HashOnly();
      default:
        throw new IllegalArgumentException("unknown impl: " + impl);
    }
  }

  /** {@link HashRing#ownerOf(String)}, {@link HashRing#ownerOf(byte[])}, {@link HashRing#owners}. */
  final class Ringmaster implements Locator {
    final HashRing ring;

    Ringmaster(HashRing ring) {
      this.ring = ring;
    }

    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(ring.ownerOf(key));
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(ring.ownerOf(key));
    }

    @Override
    public void owners(String key, int n, Blackhole bh) {
      bh.consume(ring.owners(key, n));
    }
  }

  /** The textbook {@link TreeMapRing}. */
  final class TreeMapLocator implements Locator {
    final TreeMapRing ring;

    TreeMapLocator(TreeMapRing ring) {
      this.ring = ring;
    }

    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(ring.ownerOf(key));
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(ring.ownerOf(key));
    }

    @Override
    public void owners(String key, int n, Blackhole bh) {
      bh.consume(ring.owners(key, n));
    }
  }

  /**
   * spymemcached's {@link KetamaNodeLocator} (MD5 ketama, {@code virtualNodes} points per node
   * instead of its default 160) over fake nodes. It takes String keys only, so the byte[] lookup
   * decodes the key first ({@code new String(key, UTF_8)}), as a caller holding bytes would.
   */
  final class Ketama implements Locator {
    final KetamaNodeLocator locator;

    Ketama(int nodes, int virtualNodes) {
      if (virtualNodes % 4 != 0) {
        throw new IllegalArgumentException("ketama places 4 points per MD5: virtualNodes % 4 != 0");
      }
      List<MemcachedNode> list = new ArrayList<>(nodes);
      for (int k = 0; k < nodes; k++) {
        list.add(fakeNode(new InetSocketAddress("127.0.0.1", 20_000 + k)));
      }
      DefaultKetamaNodeLocatorConfiguration config = new DefaultKetamaNodeLocatorConfiguration() {
        @Override
        public int getNodeRepetitions() {
          return virtualNodes;
        }
      };
      this.locator = new KetamaNodeLocator(list, DefaultHashAlgorithm.KETAMA_HASH, config);
    }

    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(locator.getPrimary(key));
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(locator.getPrimary(new String(key, StandardCharsets.UTF_8)));
    }

    /** A {@link MemcachedNode} that only knows its address (all the locator asks of it). */
    static MemcachedNode fakeNode(InetSocketAddress address) {
      return (MemcachedNode) Proxy.newProxyInstance(
          MemcachedNode.class.getClassLoader(),
          new Class<?>[] {MemcachedNode.class},
          (proxy, method, args) -> {
            switch (method.getName()) {
              case "getSocketAddress":
                return address;
              case "isActive":
                return true;
              case "hashCode":
                return System.identityHashCode(proxy);
              case "equals":
                return proxy == args[0];
              case "toString":
                return "FakeNode" + address;
              default:
                throw new UnsupportedOperationException("fake node: " + method.getName());
            }
          });
    }
  }

  /**
   * The plain array ring: every token in a sorted {@code long[]} (ties by member id, as
   * {@link HashRing} orders them), its owner in a parallel {@code Member[]}, and a binary search
   * for the first token at or after the key's position, wrapping to the first: what a ring costs
   * without the bucket index and the fingerprints.
   */
  final class SortedArray implements Locator {
    final long[] tokens;
    final Member[] owners;

    SortedArray(List<Member> members, int virtualNodes) {
      List<Member> byId = new ArrayList<>(members);
      byId.sort(Comparator.comparing(m -> m.id().getBytes(StandardCharsets.UTF_8), Arrays::compareUnsigned));
      long[][] pairs = new long[byId.size() * virtualNodes][];
      for (int m = 0, t = 0; m < byId.size(); m++) {
        for (int i = 0; i < virtualNodes; i++) {
          pairs[t++] = new long[] {HashRing.position(byId.get(m).id() + "#" + i), m};
        }
      }
      Arrays.sort(pairs, (x, y) -> x[0] != y[0] ? Long.compare(x[0], y[0]) : Long.compare(x[1], y[1]));
      tokens = new long[pairs.length];
      owners = new Member[pairs.length];
      for (int i = 0; i < pairs.length; i++) {
        tokens[i] = pairs[i][0];
        owners[i] = byId.get((int) pairs[i][1]);
      }
    }

    Member ownerOf(long p) {
      int low = 0;
      int high = tokens.length; // the first token >= p is in [low, high]
      while (low < high) {
        int mid = (low + high) >>> 1;
        if (tokens[mid] < p) {
          low = mid + 1;
        } else {
          high = mid;
        }
      }
      return owners[low == tokens.length ? 0 : low];
    }

    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(ownerOf(HashRing.position(key)));
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(ownerOf(HashRing.position(key)));
    }
  }

  /** Guava's jump hash over the key's ring position, mapped into a member array. */
  final class Jump implements Locator {
    final Member[] members;

    Jump(List<Member> members) {
      this.members = members.toArray(new Member[0]);
    }

    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(members[Hashing.consistentHash(HashRing.position(key), members.length)]);
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(members[Hashing.consistentHash(HashRing.position(key), members.length)]);
    }
  }

  /** The floor: only the key's position ({@link HashRing#position}), no ring at all. */
  final class HashOnly implements Locator {
    @Override
    public void owner(String key, Blackhole bh) {
      bh.consume(HashRing.position(key));
    }

    @Override
    public void owner(byte[] key, Blackhole bh) {
      bh.consume(HashRing.position(key));
    }
  }
}
