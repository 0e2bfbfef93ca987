package io.ringmaster.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.ringmaster.ring.KeyRange;
import java.io.DataInputStream;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class WireTest {
  private static DataInputStream body(byte[] message, byte op) {
    assertEquals(op, message[0]);
    return Wire.open(message, 0, message.length);
  }

  @Test
  void roundTrip_everyMessage_decodesToWhatWasSent() throws Exception {
    Entry big = Entry.of("k", "é".repeat(40_000), new Version(7, "p1")); // 80 KB: more than writeUTF allows
    Entry gone = Entry.tombstone("k2", new Version(8, "p2"));
    Wire.WriteRequest w = new Wire.WriteRequest(big, new LinkedHashSet<>(List.of("a", "b")), 2);
    assertEquals(w, Wire.readWrite(body(Wire.write(w), Wire.OP_WRITE)));

    Wire.PullRequest p = new Wire.PullRequest(12, List.of(new KeyRange(5, -5), KeyRange.full()),
        new Store.Cursor(1, Optional.of(Store.Slot.of("k9"))), 1000);
    assertEquals(p, Wire.readPull(body(Wire.pull(p), Wire.OP_PULL)));

    Wire.PushRequest push = new Wire.PushRequest(Wire.PushKind.REPAIR, "p3", List.of(big, gone));
    assertEquals(push, Wire.readPush(body(Wire.push(push), Wire.OP_PUSH)));

    Wire.WriteReply reply = new Wire.WriteReply(new LinkedHashSet<>(List.of("a", "c")), new Version(9, "c"));
    assertEquals(reply, Wire.readWriteReply(body(Wire.writeReply(reply), Wire.OK)));

    Wire.PeerStatus s = new Wire.PeerStatus("p1", 3, -99, 10, 20, 1, 0);
    assertEquals(s, Wire.readStatus(body(Wire.status(s), Wire.OP_STATUS)));

    Store.Page page = new Store.Page(List.of(gone), Optional.of(new Store.Cursor(0, Optional.of(Store.Slot.of("k2")))));
    assertEquals(page, Wire.readPage(body(Wire.page(page), Wire.OK)));
    assertEquals(Optional.of(gone), Wire.readGetReply(body(Wire.getReply(Optional.of(gone)), Wire.OK)));
  }

  @Test
  void operationBytes_neverOne_soTheCoreGossipIgnoresThem() {
    for (byte op : new byte[] {Wire.OP_WRITE, Wire.OP_GET, Wire.OP_PULL, Wire.OP_PUSH, Wire.OP_STATUS}) {
      assertNotEquals(1, op);
    }
  }
}
