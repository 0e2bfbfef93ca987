package io.ringmaster;

import java.util.Collection;
import java.util.List;
import org.jgroups.Address;
import org.jgroups.protocols.pbcast.GMS;
import org.jgroups.stack.MembershipChangePolicy;

/** A membership policy of a stack's own (JGroups' order, not a subclass of its default), set in own-policy.xml. */
public class OwnPolicy implements MembershipChangePolicy {
  private final GMS.DefaultMembershipPolicy order = new GMS.DefaultMembershipPolicy();

  @Override
  public List<Address> getNewMembership(Collection<Address> current, Collection<Address> joiners,
                                        Collection<Address> leavers, Collection<Address> suspects) {
    return order.getNewMembership(current, joiners, leavers, suspects);
  }

  @Override
  public List<Address> getNewMembership(Collection<Collection<Address>> subviews) {
    return order.getNewMembership(subviews);
  }
}
